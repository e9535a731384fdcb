-- Append-only in the database itself, not by convention in the code: any UPDATE, DELETE or
-- TRUNCATE of a ledger table is refused, whoever sends it. Record tables attach the same
-- function in their own migrations.
CREATE OR REPLACE FUNCTION vouch_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'vouch: % on % is refused: ledger tables are append-only', TG_OP, TG_TABLE_NAME
    USING ERRCODE = 'VC001',
          HINT = 'Record a new row instead of changing history.';
END;
$$;
--> statement-breakpoint
CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER merkle_nodes_append_only BEFORE UPDATE OR DELETE ON merkle_nodes
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER merkle_nodes_no_truncate BEFORE TRUNCATE ON merkle_nodes
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER checkpoints_append_only BEFORE UPDATE OR DELETE ON checkpoints
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER checkpoints_no_truncate BEFORE TRUNCATE ON checkpoints
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
-- Keys are revoked by setting revoked_at once; they are never deleted, so the audit trail
-- of who held which key stays whole.
CREATE OR REPLACE FUNCTION vouch_api_keys_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL
     AND (to_jsonb(NEW) - 'revoked_at') = (to_jsonb(OLD) - 'revoked_at') THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'vouch: % on api_keys is refused: keys can only be revoked', TG_OP
    USING ERRCODE = 'VC001';
END;
$$;
--> statement-breakpoint
CREATE TRIGGER api_keys_guard BEFORE UPDATE OR DELETE ON api_keys
  FOR EACH ROW EXECUTE FUNCTION vouch_api_keys_guard();
--> statement-breakpoint
CREATE TRIGGER api_keys_no_truncate BEFORE TRUNCATE ON api_keys
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
