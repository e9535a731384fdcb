-- Proposals and observations are appended with their arguments and result committed key by
-- key (docs/chain.md, "Records with erasable members"): a second kind of field commitment.
ALTER TABLE "audit_events" DROP CONSTRAINT "audit_events_commitment";--> statement-breakpoint
ALTER TABLE "audit_events" ADD CONSTRAINT "audit_events_commitment" CHECK ("audit_events"."commitment" IS NULL OR "audit_events"."commitment" = 'fields/1' OR "audit_events"."commitment" ~ '^member-fields/1:[a-z][a-z0-9_]{0,63}$');