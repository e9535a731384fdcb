-- A redaction in the operator CLI's name (actor `system:cli`, docs/chain.md "Who may erase")
-- holds no key that verification could check: what makes it the operator's is that only the
-- role owning the ledger tables may delete field content under it. Any other role, the runtime
-- role included, may still append such an event, but it then erases nothing.
CREATE OR REPLACE FUNCTION vouch_event_fields_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND EXISTS (
    SELECT 1
      FROM audit_events target
      JOIN audit_events redaction
        ON redaction.log_id = target.log_id
       AND redaction.entity_id = 'event/' || target.seq
       AND redaction.kind = 'event.redacted'
       AND redaction.seq > target.seq
     WHERE target.log_id = OLD.log_id
       AND target.seq = OLD.seq
       AND (redaction.payload::jsonb -> 'target' ->> 'seq') = OLD.seq::text
       AND (redaction.payload::jsonb -> 'target' ->> 'hash') = target.hash
       AND (redaction.payload::jsonb -> 'fields') ? OLD.name
       AND (redaction.actor <> 'system:cli'
            OR pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'MEMBER'))
  ) THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'vouch: % on event_fields is refused: a field is erased only under an event.redacted event that names it (in system:cli''s name, by the owner role only)', TG_OP
    USING ERRCODE = 'VC001',
          HINT = 'Redact through the ledger (vouch redact), which appends the redaction event first.';
END;
$$;
