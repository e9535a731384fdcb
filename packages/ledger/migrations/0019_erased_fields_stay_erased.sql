-- A field an `event.redacted` event erased stays erased: no role may put its content back into
-- event_fields (docs/chain.md, "Erasing a field"). The content of a fields/1 event is written
-- with the event, before any redaction can name it, so the honest path never meets this; a
-- row saved before the erasure and inserted again after it is refused. Only redactions after
-- the event count, as in vouch_event_fields_guard, so an event appended beforehand in a
-- future event's name blocks nothing. Once per statement, over the rows it inserted: the
-- ledger writes a wave's field rows in one statement, and a check per row cost twice as much.
--
-- The lookup must see every redaction committed before the row went in. At read committed it
-- does: the check runs after the insert, which waited for a redaction deleting the same row,
-- with a snapshot of its own. A repeatable read or serializable transaction would look from
-- a snapshot taken before the redaction, and put the row back unseen: field content is only
-- ever written at read committed (as the ledger writes it), or not at all.
CREATE OR REPLACE FUNCTION vouch_erased_fields_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  kept record;
BEGIN
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'vouch: INSERT on event_fields is refused at isolation level %: field content is written at read committed, where the check against erased fields sees every redaction', current_setting('transaction_isolation')
      USING ERRCODE = 'VC001',
            HINT = 'Field content is written only with its event, by the ledger.';
  END IF;
  SELECT i.seq, i.name INTO kept
    FROM inserted i
    JOIN audit_events redaction
      ON redaction.log_id = i.log_id
     AND redaction.entity_id = 'event/' || i.seq
     AND redaction.kind = 'event.redacted'
     AND redaction.seq > i.seq
   WHERE (redaction.payload::jsonb -> 'target' ->> 'seq') = i.seq::text
     AND (redaction.payload::jsonb -> 'fields') ? i.name
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'vouch: INSERT on event_fields is refused: field % of event % was erased by an event.redacted event, and an erased field stays erased', kept.name, kept.seq
      USING ERRCODE = 'VC001',
            HINT = 'Field content is written only with its event; an erasure cannot be undone.';
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER event_fields_erased_guard AFTER INSERT ON event_fields
  REFERENCING NEW TABLE AS inserted
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_erased_fields_guard();
