-- Verifications queued to run in the background (docs/verification.md): operational data, not
-- the audit chain. A job without a result is resumed when a server starts; what it produces
-- is a verification record in the chain. Append-only like every other table.
CREATE TABLE "verification_job_results" (
	"log_id" text NOT NULL,
	"job_id" text NOT NULL,
	"verification_id" text,
	"error_code" text,
	"finished_at" text NOT NULL,
	CONSTRAINT "verification_job_results_pk" PRIMARY KEY("log_id","job_id")
);
--> statement-breakpoint
CREATE TABLE "verification_jobs" (
	"log_id" text NOT NULL,
	"id" text NOT NULL,
	"observation_id" text NOT NULL,
	"proposal_id" text NOT NULL,
	"requested_by" text NOT NULL,
	"body" text NOT NULL,
	"requested_at" text NOT NULL,
	CONSTRAINT "verification_jobs_pk" PRIMARY KEY("log_id","id")
);
--> statement-breakpoint
ALTER TABLE "verification_job_results" ADD CONSTRAINT "verification_job_results_job" FOREIGN KEY ("log_id","job_id") REFERENCES "public"."verification_jobs"("log_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "verification_jobs_proposal" ON "verification_jobs" USING btree ("log_id","proposal_id");--> statement-breakpoint
CREATE TRIGGER verification_jobs_append_only BEFORE UPDATE OR DELETE ON verification_jobs
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER verification_jobs_no_truncate BEFORE TRUNCATE ON verification_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER verification_job_results_append_only BEFORE UPDATE OR DELETE ON verification_job_results
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER verification_job_results_no_truncate BEFORE TRUNCATE ON verification_job_results
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
