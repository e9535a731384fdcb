-- A field an `event.redacted` event erased stays erased: no role may put its content back into
-- event_fields (docs/chain.md, "Erasing a field"). The content of a fields/1 event is written
-- with the event, before any redaction can name it, so the honest path never meets this; a
-- row saved before the erasure and inserted again after it is refused. Only redactions after
-- the event count, as in vouch_event_fields_guard, so an event appended beforehand in a
-- future event's name blocks nothing.
CREATE OR REPLACE FUNCTION vouch_erased_fields_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (
    SELECT 1
      FROM audit_events redaction
     WHERE redaction.log_id = NEW.log_id
       AND redaction.entity_id = 'event/' || NEW.seq
       AND redaction.kind = 'event.redacted'
       AND redaction.seq > NEW.seq
       AND (redaction.payload::jsonb -> 'target' ->> 'seq') = NEW.seq::text
       AND (redaction.payload::jsonb -> 'fields') ? NEW.name
  ) THEN
    RAISE EXCEPTION 'vouch: INSERT on event_fields is refused: field % of event % was erased by an event.redacted event, and an erased field stays erased', NEW.name, NEW.seq
      USING ERRCODE = 'VC001',
            HINT = 'Field content is written only with its event; an erasure cannot be undone.';
  END IF;
  RETURN NEW;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER event_fields_erased_guard BEFORE INSERT ON event_fields
  FOR EACH ROW EXECUTE FUNCTION vouch_erased_fields_guard();
