-- A deleted record row cannot re-open execution (docs/chain.md, "A row that is deleted"): the
-- reads that decide whether a proposal was already claimed or observed, or a single-use
-- approval already used, look for the events too, so a row the table owner deleted leaves its
-- event to be found. Those events name their record (entity), not the proposal or request
-- they are about: this is the one lookup by what they are about. The subject is read from the
-- canonical payload: `request_id` for an approval use, `proposal_id` for an execution claim or
-- an observation. Every escaped backslash and every `\u0000` are taken out first: the json
-- type refuses to read any member of an object holding `\u0000`, and the ids never hold
-- either. An event of these kinds whose payload is not JSON cannot be inserted (the server
-- never writes one). Partial: the other events cost nothing to index.
CREATE FUNCTION vouch_event_subject(kind text, payload text) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
  SELECT replace(replace(payload, '\\', ''), '\u0000', '')::json
    ->> (CASE kind WHEN 'approval_use' THEN 'request_id' ELSE 'proposal_id' END)
$$;
--> statement-breakpoint
CREATE INDEX "audit_events_subject" ON "audit_events" USING btree ("log_id",vouch_event_subject("kind", "payload")) WHERE "audit_events"."kind" in ('approval_use', 'execution_claim', 'observation');
