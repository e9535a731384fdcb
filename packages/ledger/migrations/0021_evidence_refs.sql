-- Evidence is bound to one proposal (docs/verification.md, "Evidence is bound"): the first
-- proposal each evidence reference (a `pass` check's `evidence_ref`, e.g. `refund:rf_123`)
-- proved, per log, so a later pass naming the same reference for another proposal is found
-- with one primary-key lookup and recorded as EVIDENCE_REUSED. Written with the verification
-- that used the reference first, linked to its event; the primary key lets one reference have
-- one first use. An index of the chain, not a record: verifyChain derives the same first uses
-- from the events. Append-only like every record table (vouch_refuse_change() from 0001); the
-- runtime role gets SELECT and INSERT on it when `vouch migrate --runtime-role` grants again.
CREATE TABLE "evidence_refs" (
	"log_id" text NOT NULL,
	"ref" text NOT NULL,
	"proposal_id" text NOT NULL,
	"verification_id" text NOT NULL,
	"event_seq" bigint NOT NULL,
	CONSTRAINT "evidence_refs_pk" PRIMARY KEY("log_id","ref")
);
--> statement-breakpoint
ALTER TABLE "evidence_refs" ADD CONSTRAINT "evidence_refs_event_fk" FOREIGN KEY ("log_id","event_seq") REFERENCES "public"."audit_events"("log_id","seq") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE TRIGGER evidence_refs_append_only BEFORE UPDATE OR DELETE ON evidence_refs
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER evidence_refs_no_truncate BEFORE TRUNCATE ON evidence_refs
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
