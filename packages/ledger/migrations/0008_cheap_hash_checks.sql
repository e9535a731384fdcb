ALTER TABLE "audit_events" DROP CONSTRAINT "audit_events_hash_hex";--> statement-breakpoint
ALTER TABLE "proposals" DROP CONSTRAINT "proposals_payload_hash_hex";--> statement-breakpoint
ALTER TABLE "audit_events" ADD CONSTRAINT "audit_events_hash_length" CHECK (octet_length("audit_events"."hash") = 64 AND octet_length("audit_events"."payload_hash") = 64);--> statement-breakpoint
ALTER TABLE "proposals" ADD CONSTRAINT "proposals_payload_hash_length" CHECK (octet_length("proposals"."payload_hash") = 64);--> statement-breakpoint
-- Every server process caches the keys it has authenticated; a revocation committed by any
-- process (or by `vouch keys revoke`) tells them all at commit, so none accepts the key again.
CREATE OR REPLACE FUNCTION vouch_notify_key_revoked() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('vouch_api_key_revoked', NEW.key_id);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER api_key_revocations_notify AFTER INSERT ON api_key_revocations
  FOR EACH ROW EXECUTE FUNCTION vouch_notify_key_revoked();
