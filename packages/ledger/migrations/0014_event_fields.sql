CREATE TABLE "event_fields" (
	"log_id" text NOT NULL,
	"seq" bigint NOT NULL,
	"name" text NOT NULL,
	"salt" text NOT NULL,
	"value" text NOT NULL,
	CONSTRAINT "event_fields_log_id_seq_name_pk" PRIMARY KEY("log_id","seq","name")
);
--> statement-breakpoint
ALTER TABLE "audit_events" ADD COLUMN "commitment" text;--> statement-breakpoint
ALTER TABLE "event_fields" ADD CONSTRAINT "event_fields_event" FOREIGN KEY ("log_id","seq") REFERENCES "public"."audit_events"("log_id","seq") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "audit_events" ADD CONSTRAINT "audit_events_commitment" CHECK ("audit_events"."commitment" IS NULL OR "audit_events"."commitment" = 'fields/1');--> statement-breakpoint
-- Field content of fields/1 events (docs/chain.md, "Erasing a field"). Never updated, never
-- truncated; a row is deleted only when the log already holds an `event.redacted` event,
-- after the field's event, that names this event (its seq and hash) and this field. So the
-- one DELETE the runtime role is granted erases exactly what an audited redaction says.
CREATE OR REPLACE FUNCTION vouch_event_fields_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND EXISTS (
    SELECT 1
      FROM audit_events target
      JOIN audit_events redaction
        ON redaction.log_id = target.log_id
       AND redaction.entity_id = 'event/' || target.seq
       AND redaction.kind = 'event.redacted'
       AND redaction.seq > target.seq
     WHERE target.log_id = OLD.log_id
       AND target.seq = OLD.seq
       AND (redaction.payload::jsonb -> 'target' ->> 'seq') = OLD.seq::text
       AND (redaction.payload::jsonb -> 'target' ->> 'hash') = target.hash
       AND (redaction.payload::jsonb -> 'fields') ? OLD.name
  ) THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'vouch: % on event_fields is refused: a field is erased only under an event.redacted event that names it', TG_OP
    USING ERRCODE = 'VC001',
          HINT = 'Redact through the ledger (vouch redact), which appends the redaction event first.';
END;
$$;
--> statement-breakpoint
CREATE TRIGGER event_fields_guard BEFORE UPDATE OR DELETE ON event_fields
  FOR EACH ROW EXECUTE FUNCTION vouch_event_fields_guard();
--> statement-breakpoint
CREATE TRIGGER event_fields_no_truncate BEFORE TRUNCATE ON event_fields
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
