-- API keys are provable from the chain: each key row names its api_key.created event
-- (event_seq), and a revocation is a row of its own, bound to its api_key.revoked event,
-- instead of an UPDATE of api_keys. After this migration no row of api_keys ever changes.
CREATE TABLE "api_key_revocations" (
	"key_id" text PRIMARY KEY NOT NULL,
	"event_seq" bigint,
	"revoked_by" text NOT NULL,
	"revoked_at" text NOT NULL,
	CONSTRAINT "api_key_revocations_event" UNIQUE("event_seq")
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "event_seq" bigint;--> statement-breakpoint
ALTER TABLE "api_key_revocations" ADD CONSTRAINT "api_key_revocations_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
-- The old guard allowed the one UPDATE that set revoked_at; the binding below is the last
-- UPDATE api_keys ever sees, and the new guard refuses every one.
DROP TRIGGER "api_keys_guard" ON "api_keys";--> statement-breakpoint
DROP FUNCTION vouch_api_keys_guard();--> statement-breakpoint
-- Existing keys: bound to the first api_key.created event about them. A row no event
-- names keeps event_seq NULL and authenticates nothing from now on (it was inserted
-- behind the ledger's back); a row that differs from its event is refused the same way.
UPDATE "api_keys" AS k SET "event_seq" = (
	SELECT min(e."seq") FROM "audit_events" AS e
	WHERE e."log_id" = 'system' AND e."kind" = 'api_key.created' AND e."entity_id" = k."id"
);--> statement-breakpoint
-- Existing revocations become rows. A revocation without its event still revokes (a
-- revocation only takes power away); verification reports its missing event.
INSERT INTO "api_key_revocations" ("key_id", "event_seq", "revoked_by", "revoked_at")
SELECT k."id", e."seq", coalesce(e."actor", 'system:migration'), k."revoked_at"
FROM "api_keys" AS k
LEFT JOIN LATERAL (
	SELECT r."seq", r."actor" FROM "audit_events" AS r
	WHERE r."log_id" = 'system' AND r."kind" = 'api_key.revoked' AND r."entity_id" = k."id"
	ORDER BY r."seq" LIMIT 1
) AS e ON true
WHERE k."revoked_at" IS NOT NULL;--> statement-breakpoint
ALTER TABLE "api_keys" DROP COLUMN "revoked_at";--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_event" UNIQUE("event_seq");--> statement-breakpoint
CREATE TRIGGER api_keys_append_only BEFORE UPDATE OR DELETE ON api_keys
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER api_key_revocations_append_only BEFORE UPDATE OR DELETE ON api_key_revocations
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER api_key_revocations_no_truncate BEFORE TRUNCATE ON api_key_revocations
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
