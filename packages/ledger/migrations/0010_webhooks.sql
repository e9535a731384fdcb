-- Outbound webhooks (docs/webhooks.md): the dispatcher's cursors, deliveries and attempts.
-- Operational data, not the audit chain: no event names these rows and chain verification
-- never reads them. Append-only like every other table (vouch_refuse_change() from
-- 0001_core_append_only), so the runtime role keeps SELECT and INSERT only.
CREATE TABLE "webhook_attempt_results" (
	"delivery_id" text NOT NULL,
	"attempt" integer NOT NULL,
	"finished_at" text NOT NULL,
	"outcome" text NOT NULL,
	"status_code" integer,
	"error_code" text,
	"duration_ms" integer NOT NULL,
	"next_attempt_at" text,
	CONSTRAINT "webhook_attempt_results_pk" PRIMARY KEY("delivery_id","attempt"),
	CONSTRAINT "webhook_attempt_results_outcome" CHECK ("webhook_attempt_results"."outcome" in ('delivered', 'retry', 'failed', 'cancelled') and ("webhook_attempt_results"."outcome" = 'retry') = ("webhook_attempt_results"."next_attempt_at" is not null))
);
--> statement-breakpoint
CREATE TABLE "webhook_attempts" (
	"delivery_id" text NOT NULL,
	"attempt" integer NOT NULL,
	"claimed_at" text NOT NULL,
	"lease_until" text NOT NULL,
	CONSTRAINT "webhook_attempts_pk" PRIMARY KEY("delivery_id","attempt"),
	CONSTRAINT "webhook_attempts_positive" CHECK ("webhook_attempts"."attempt" >= 1)
);
--> statement-breakpoint
CREATE TABLE "webhook_cursors" (
	"log_id" text NOT NULL,
	"seq" bigint NOT NULL,
	"read_at" text NOT NULL,
	CONSTRAINT "webhook_cursors_pk" PRIMARY KEY("log_id","seq")
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"id" text PRIMARY KEY NOT NULL,
	"target" text NOT NULL,
	"event" text NOT NULL,
	"log_id" text NOT NULL,
	"seq" bigint,
	"subject" text NOT NULL,
	"body" text NOT NULL,
	"created_at" text NOT NULL,
	"due_at" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "webhook_attempt_results" ADD CONSTRAINT "webhook_attempt_results_attempt" FOREIGN KEY ("delivery_id","attempt") REFERENCES "public"."webhook_attempts"("delivery_id","attempt") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_delivery" FOREIGN KEY ("delivery_id") REFERENCES "public"."webhook_deliveries"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_due" ON "webhook_deliveries" USING btree ("due_at");--> statement-breakpoint
CREATE TRIGGER webhook_cursors_append_only BEFORE UPDATE OR DELETE ON webhook_cursors
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER webhook_cursors_no_truncate BEFORE TRUNCATE ON webhook_cursors
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER webhook_deliveries_append_only BEFORE UPDATE OR DELETE ON webhook_deliveries
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER webhook_deliveries_no_truncate BEFORE TRUNCATE ON webhook_deliveries
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER webhook_attempts_append_only BEFORE UPDATE OR DELETE ON webhook_attempts
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER webhook_attempts_no_truncate BEFORE TRUNCATE ON webhook_attempts
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER webhook_attempt_results_append_only BEFORE UPDATE OR DELETE ON webhook_attempt_results
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER webhook_attempt_results_no_truncate BEFORE TRUNCATE ON webhook_attempt_results
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
