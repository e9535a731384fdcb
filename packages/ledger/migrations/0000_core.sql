CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"key_hash" text NOT NULL,
	"identity" text NOT NULL,
	"roles" jsonb NOT NULL,
	"environments" jsonb,
	"logs" jsonb,
	"created_by" text NOT NULL,
	"created_at" text NOT NULL,
	"revoked_at" text,
	CONSTRAINT "api_keys_key_hash_unique" UNIQUE("key_hash")
);
--> statement-breakpoint
CREATE TABLE "audit_events" (
	"log_id" text NOT NULL,
	"seq" bigint NOT NULL,
	"kind" text NOT NULL,
	"entity_id" text NOT NULL,
	"actor" text NOT NULL,
	"recorded_at" text NOT NULL,
	"payload" text NOT NULL,
	"payload_hash" text NOT NULL,
	"prev_hash" text NOT NULL,
	"hash" text NOT NULL,
	"prev_seq" bigint GENERATED ALWAYS AS (CASE WHEN seq > 1 THEN seq - 1 END) STORED,
	CONSTRAINT "audit_events_log_id_seq_pk" PRIMARY KEY("log_id","seq"),
	CONSTRAINT "audit_events_link_target" UNIQUE("log_id","seq","hash"),
	CONSTRAINT "audit_events_seq_positive" CHECK ("audit_events"."seq" >= 1),
	CONSTRAINT "audit_events_genesis" CHECK ("audit_events"."seq" > 1 OR "audit_events"."prev_hash" = '0000000000000000000000000000000000000000000000000000000000000000'),
	CONSTRAINT "audit_events_hash_hex" CHECK ("audit_events"."hash" ~ '^[0-9a-f]{64}$' AND "audit_events"."payload_hash" ~ '^[0-9a-f]{64}$')
);
--> statement-breakpoint
CREATE TABLE "checkpoints" (
	"log_id" text NOT NULL,
	"tree_size" bigint NOT NULL,
	"root_hash" text NOT NULL,
	"note" text NOT NULL,
	"created_at" text NOT NULL,
	CONSTRAINT "checkpoints_log_id_tree_size_pk" PRIMARY KEY("log_id","tree_size")
);
--> statement-breakpoint
CREATE TABLE "merkle_nodes" (
	"log_id" text NOT NULL,
	"level" integer NOT NULL,
	"idx" bigint NOT NULL,
	"hash" text NOT NULL,
	CONSTRAINT "merkle_nodes_log_id_level_idx_pk" PRIMARY KEY("log_id","level","idx")
);
--> statement-breakpoint
ALTER TABLE "audit_events" ADD CONSTRAINT "audit_events_prev_link" FOREIGN KEY ("log_id","prev_seq","prev_hash") REFERENCES "public"."audit_events"("log_id","seq","hash") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "audit_events_entity" ON "audit_events" USING btree ("log_id","entity_id");