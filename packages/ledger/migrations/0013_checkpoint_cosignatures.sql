CREATE TABLE "checkpoint_cosignatures" (
	"log_id" text NOT NULL,
	"tree_size" bigint NOT NULL,
	"witness" text NOT NULL,
	"key_id" text NOT NULL,
	"line" text NOT NULL,
	"created_at" text NOT NULL,
	CONSTRAINT "checkpoint_cosignatures_log_id_tree_size_witness_key_id_pk" PRIMARY KEY("log_id","tree_size","witness","key_id")
);
--> statement-breakpoint
-- Witness cosignatures are kept, never changed: append-only like every other table
-- (vouch_refuse_change() from 0001_core_append_only).
CREATE TRIGGER checkpoint_cosignatures_append_only BEFORE UPDATE OR DELETE ON checkpoint_cosignatures
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER checkpoint_cosignatures_no_truncate BEFORE TRUNCATE ON checkpoint_cosignatures
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
