CREATE TABLE "execution_claims" (
	"log_id" text NOT NULL,
	"id" text NOT NULL,
	"event_seq" bigint NOT NULL,
	"proposal_id" text NOT NULL,
	"decision_id" text NOT NULL,
	"approval_use_id" text,
	"claimed_by" text NOT NULL,
	"claimed_at" text NOT NULL,
	"deadline" text NOT NULL,
	CONSTRAINT "execution_claims_pk" PRIMARY KEY("log_id","id"),
	CONSTRAINT "execution_claims_event" UNIQUE("log_id","event_seq"),
	CONSTRAINT "execution_claims_one_per_proposal" UNIQUE("log_id","proposal_id")
);
--> statement-breakpoint
ALTER TABLE "execution_claims" ADD CONSTRAINT "execution_claims_event_fk" FOREIGN KEY ("log_id","event_seq") REFERENCES "public"."audit_events"("log_id","seq") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "execution_claims" ADD CONSTRAINT "execution_claims_decision" FOREIGN KEY ("log_id","decision_id") REFERENCES "public"."decisions"("log_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "execution_claims_deadline" ON "execution_claims" USING btree ("deadline");--> statement-breakpoint
-- Append-only like every record table (vouch_refuse_change() from 0001_core_append_only).
CREATE TRIGGER execution_claims_append_only BEFORE UPDATE OR DELETE ON execution_claims
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER execution_claims_no_truncate BEFORE TRUNCATE ON execution_claims
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
