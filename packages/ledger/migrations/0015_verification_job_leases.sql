-- Leases on verification jobs: a process runs a job only while it holds the latest term, so
-- servers that start together (or `vouch serve --workers N`) never run one job twice.
-- Append-only like every other table: a renewal or a release is the next term.
CREATE TABLE "verification_job_leases" (
	"log_id" text NOT NULL,
	"job_id" text NOT NULL,
	"term" integer NOT NULL,
	"holder" text NOT NULL,
	"lease_until" text NOT NULL,
	CONSTRAINT "verification_job_leases_pk" PRIMARY KEY("log_id","job_id","term"),
	CONSTRAINT "verification_job_leases_term_positive" CHECK ("verification_job_leases"."term" >= 1)
);
--> statement-breakpoint
ALTER TABLE "verification_job_leases" ADD CONSTRAINT "verification_job_leases_job" FOREIGN KEY ("log_id","job_id") REFERENCES "public"."verification_jobs"("log_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE TRIGGER verification_job_leases_append_only BEFORE UPDATE OR DELETE ON verification_job_leases
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER verification_job_leases_no_truncate BEFORE TRUNCATE ON verification_job_leases
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
