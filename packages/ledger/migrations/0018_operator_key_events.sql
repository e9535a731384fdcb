-- An event of the `system` log in the operator CLI's name (actor `system:cli`: `vouch keys
-- create`, `revoke`, `rotate`) holds no key that verification could check: what makes it the
-- operator's is that only the role owning the ledger tables may write one. The runtime role
-- (`vouch serve`) never writes the system log as `system:cli`; verification then accepts a
-- key event only from the operator, the bootstrap's first key, or a live admin key
-- (docs/chain.md, "Who may issue and revoke keys").
CREATE OR REPLACE FUNCTION vouch_operator_events_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'MEMBER') THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'vouch: INSERT on audit_events is refused: an event of the system log in system:cli''s name is written by the owner role only'
    USING ERRCODE = 'VC001',
          HINT = 'Issue and revoke keys as the operator with vouch keys, connected as the role that owns the ledger tables; the server writes them in the admin''s name.';
END;
$$;
--> statement-breakpoint
CREATE TRIGGER audit_events_operator_guard BEFORE INSERT ON audit_events
  FOR EACH ROW WHEN (NEW.log_id = 'system' AND NEW.actor = 'system:cli')
  EXECUTE FUNCTION vouch_operator_events_guard();
