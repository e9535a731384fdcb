CREATE TABLE "approval_requests" (
	"log_id" text NOT NULL,
	"id" text NOT NULL,
	"event_seq" bigint NOT NULL,
	"proposal_id" text NOT NULL,
	"payload_hash" text NOT NULL,
	"requester" text NOT NULL,
	"server_id" text NOT NULL,
	"tool_name" text NOT NULL,
	"environment" text,
	"expires_at" text NOT NULL,
	"max_window_seconds" integer NOT NULL,
	"requested_at" text NOT NULL,
	CONSTRAINT "approval_requests_pk" PRIMARY KEY("log_id","id"),
	CONSTRAINT "approval_requests_event" UNIQUE("log_id","event_seq")
);
--> statement-breakpoint
CREATE TABLE "approval_resolutions" (
	"log_id" text NOT NULL,
	"id" text NOT NULL,
	"event_seq" bigint NOT NULL,
	"request_id" text NOT NULL,
	"resolution" text NOT NULL,
	"resolver" text NOT NULL,
	"validity" text,
	"window_seconds" integer,
	"window_source" text,
	"valid_until" text,
	"comment" text,
	"resolved_at" text NOT NULL,
	CONSTRAINT "approval_resolutions_pk" PRIMARY KEY("log_id","id"),
	CONSTRAINT "approval_resolutions_event" UNIQUE("log_id","event_seq"),
	CONSTRAINT "approval_resolutions_one_per_request" UNIQUE("log_id","request_id"),
	CONSTRAINT "approval_resolutions_resolution" CHECK ("approval_resolutions"."resolution" in ('approved', 'denied'))
);
--> statement-breakpoint
CREATE TABLE "approval_uses" (
	"log_id" text NOT NULL,
	"id" text NOT NULL,
	"event_seq" bigint NOT NULL,
	"request_id" text NOT NULL,
	"resolution_id" text NOT NULL,
	"proposal_id" text NOT NULL,
	"validity" text NOT NULL,
	"used_by" text NOT NULL,
	"used_at" text NOT NULL,
	CONSTRAINT "approval_uses_pk" PRIMARY KEY("log_id","id"),
	CONSTRAINT "approval_uses_event" UNIQUE("log_id","event_seq"),
	CONSTRAINT "approval_uses_one_per_proposal" UNIQUE("log_id","request_id","proposal_id"),
	CONSTRAINT "approval_uses_validity" CHECK ("approval_uses"."validity" in ('once', 'window'))
);
--> statement-breakpoint
CREATE TABLE "decisions" (
	"log_id" text NOT NULL,
	"id" text NOT NULL,
	"event_seq" bigint NOT NULL,
	"proposal_id" text NOT NULL,
	"verdict" text NOT NULL,
	"reasons" text NOT NULL,
	"repair" text NOT NULL,
	"authorized_identity" text,
	"source" text NOT NULL,
	"tool_id" text,
	"approval_request_id" text,
	"decided_by" text NOT NULL,
	"decided_at" text NOT NULL,
	CONSTRAINT "decisions_pk" PRIMARY KEY("log_id","id"),
	CONSTRAINT "decisions_event" UNIQUE("log_id","event_seq"),
	CONSTRAINT "decisions_one_per_proposal" UNIQUE("log_id","proposal_id"),
	CONSTRAINT "decisions_verdict" CHECK ("decisions"."verdict" in ('allow', 'deny', 'repair', 'require_approval'))
);
--> statement-breakpoint
CREATE TABLE "observations" (
	"log_id" text NOT NULL,
	"id" text NOT NULL,
	"event_seq" bigint NOT NULL,
	"proposal_id" text NOT NULL,
	"decision_id" text NOT NULL,
	"approval_use_id" text,
	"server_id" text NOT NULL,
	"tool_name" text NOT NULL,
	"executed_by" text NOT NULL,
	"outcome" text NOT NULL,
	"result" text NOT NULL,
	"transport_status" integer,
	"tool_error" boolean,
	"started_at" text,
	"finished_at" text,
	"observed_at" text NOT NULL,
	CONSTRAINT "observations_pk" PRIMARY KEY("log_id","id"),
	CONSTRAINT "observations_event" UNIQUE("log_id","event_seq"),
	CONSTRAINT "observations_one_per_proposal" UNIQUE("log_id","proposal_id"),
	CONSTRAINT "observations_outcome" CHECK ("observations"."outcome" in ('succeeded', 'failed', 'unknown'))
);
--> statement-breakpoint
CREATE TABLE "proposals" (
	"log_id" text NOT NULL,
	"id" text NOT NULL,
	"event_seq" bigint NOT NULL,
	"idempotency_key" text NOT NULL,
	"requester" text NOT NULL,
	"requester_scopes" text NOT NULL,
	"requester_environments" text NOT NULL,
	"action" text NOT NULL,
	"server_id" text NOT NULL,
	"tool_name" text NOT NULL,
	"target_kind" text NOT NULL,
	"target_id" text,
	"target_env" text,
	"arguments" text NOT NULL,
	"side_effect" text NOT NULL,
	"preconditions" text NOT NULL,
	"postconditions" text NOT NULL,
	"impact" text NOT NULL,
	"payload_hash" text NOT NULL,
	"proposed_at" text NOT NULL,
	CONSTRAINT "proposals_pk" PRIMARY KEY("log_id","id"),
	CONSTRAINT "proposals_event" UNIQUE("log_id","event_seq"),
	CONSTRAINT "proposals_idempotency_key" UNIQUE("log_id","idempotency_key"),
	CONSTRAINT "proposals_side_effect" CHECK ("proposals"."side_effect" in ('read_only', 'idempotent', 'compensatable', 'irreversible')),
	CONSTRAINT "proposals_payload_hash_hex" CHECK ("proposals"."payload_hash" ~ '^[0-9a-f]{64}$')
);
--> statement-breakpoint
CREATE TABLE "refused_executions" (
	"log_id" text NOT NULL,
	"id" text NOT NULL,
	"event_seq" bigint NOT NULL,
	"proposal_id" text NOT NULL,
	"code" text NOT NULL,
	"message" text NOT NULL,
	"attempted_by" text NOT NULL,
	"attempted" text NOT NULL,
	"refused_at" text NOT NULL,
	CONSTRAINT "refused_executions_pk" PRIMARY KEY("log_id","id"),
	CONSTRAINT "refused_executions_event" UNIQUE("log_id","event_seq")
);
--> statement-breakpoint
CREATE TABLE "tools" (
	"log_id" text NOT NULL,
	"id" text NOT NULL,
	"event_seq" bigint NOT NULL,
	"server_id" text NOT NULL,
	"tool_name" text NOT NULL,
	"version" integer NOT NULL,
	"side_effect" text NOT NULL,
	"required_scopes" text NOT NULL,
	"allowed_environments" text NOT NULL,
	"dry_run_tool" text,
	"compensation_tool" text,
	"approval_required" boolean NOT NULL,
	"requires_target_id" boolean NOT NULL,
	"max_approval_window_seconds" integer,
	"source" text NOT NULL,
	"registered_by" text NOT NULL,
	"registered_at" text NOT NULL,
	CONSTRAINT "tools_pk" PRIMARY KEY("log_id","id"),
	CONSTRAINT "tools_event" UNIQUE("log_id","event_seq"),
	CONSTRAINT "tools_version" UNIQUE("log_id","server_id","tool_name","version"),
	CONSTRAINT "tools_side_effect" CHECK ("tools"."side_effect" in ('read_only', 'idempotent', 'compensatable', 'irreversible')),
	CONSTRAINT "tools_source" CHECK ("tools"."source" in ('manual', 'discovery'))
);
--> statement-breakpoint
CREATE TABLE "verifications" (
	"log_id" text NOT NULL,
	"id" text NOT NULL,
	"event_seq" bigint NOT NULL,
	"observation_id" text NOT NULL,
	"proposal_id" text NOT NULL,
	"checks" text NOT NULL,
	"status" text NOT NULL,
	"verifier" text NOT NULL,
	"verified_at" text NOT NULL,
	CONSTRAINT "verifications_pk" PRIMARY KEY("log_id","id"),
	CONSTRAINT "verifications_event" UNIQUE("log_id","event_seq"),
	CONSTRAINT "verifications_status" CHECK ("verifications"."status" in ('passed', 'failed', 'inconclusive'))
);
--> statement-breakpoint
ALTER TABLE "approval_requests" ADD CONSTRAINT "approval_requests_event_fk" FOREIGN KEY ("log_id","event_seq") REFERENCES "public"."audit_events"("log_id","seq") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "approval_requests" ADD CONSTRAINT "approval_requests_proposal" FOREIGN KEY ("log_id","proposal_id") REFERENCES "public"."proposals"("log_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "approval_resolutions" ADD CONSTRAINT "approval_resolutions_event_fk" FOREIGN KEY ("log_id","event_seq") REFERENCES "public"."audit_events"("log_id","seq") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "approval_resolutions" ADD CONSTRAINT "approval_resolutions_request" FOREIGN KEY ("log_id","request_id") REFERENCES "public"."approval_requests"("log_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "approval_uses" ADD CONSTRAINT "approval_uses_event_fk" FOREIGN KEY ("log_id","event_seq") REFERENCES "public"."audit_events"("log_id","seq") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "approval_uses" ADD CONSTRAINT "approval_uses_resolution" FOREIGN KEY ("log_id","resolution_id") REFERENCES "public"."approval_resolutions"("log_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "decisions" ADD CONSTRAINT "decisions_event_fk" FOREIGN KEY ("log_id","event_seq") REFERENCES "public"."audit_events"("log_id","seq") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "decisions" ADD CONSTRAINT "decisions_proposal" FOREIGN KEY ("log_id","proposal_id") REFERENCES "public"."proposals"("log_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "observations" ADD CONSTRAINT "observations_event_fk" FOREIGN KEY ("log_id","event_seq") REFERENCES "public"."audit_events"("log_id","seq") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "observations" ADD CONSTRAINT "observations_decision" FOREIGN KEY ("log_id","decision_id") REFERENCES "public"."decisions"("log_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "proposals" ADD CONSTRAINT "proposals_event_fk" FOREIGN KEY ("log_id","event_seq") REFERENCES "public"."audit_events"("log_id","seq") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "refused_executions" ADD CONSTRAINT "refused_executions_event_fk" FOREIGN KEY ("log_id","event_seq") REFERENCES "public"."audit_events"("log_id","seq") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tools" ADD CONSTRAINT "tools_event_fk" FOREIGN KEY ("log_id","event_seq") REFERENCES "public"."audit_events"("log_id","seq") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "verifications" ADD CONSTRAINT "verifications_event_fk" FOREIGN KEY ("log_id","event_seq") REFERENCES "public"."audit_events"("log_id","seq") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "verifications" ADD CONSTRAINT "verifications_observation" FOREIGN KEY ("log_id","observation_id") REFERENCES "public"."observations"("log_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "approval_requests_scope" ON "approval_requests" USING btree ("log_id","requester","server_id","tool_name","payload_hash");--> statement-breakpoint
CREATE UNIQUE INDEX "approval_uses_single_use" ON "approval_uses" USING btree ("log_id","request_id") WHERE "approval_uses"."validity" = 'once';--> statement-breakpoint
CREATE INDEX "refused_executions_proposal" ON "refused_executions" USING btree ("log_id","proposal_id");--> statement-breakpoint
CREATE INDEX "verifications_proposal" ON "verifications" USING btree ("log_id","proposal_id");