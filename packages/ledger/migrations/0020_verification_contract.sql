-- The verification contract (docs/verification.md). Every new column is nullable: a record
-- that does not use the field leaves it out of its payload, so every row written before this
-- migration still rebuilds its event byte for byte.
--
-- tools.postconditions: what the operator requires every call of the tool to prove.
-- tools.unproven_preconditions: `warn` lets an unproven precondition through at authorize.
-- execution_claims.preconditions: the precondition checks authorize ran, in the chain.
ALTER TABLE "tools" ADD COLUMN "postconditions" text;--> statement-breakpoint
ALTER TABLE "tools" ADD COLUMN "unproven_preconditions" text;--> statement-breakpoint
ALTER TABLE "execution_claims" ADD COLUMN "preconditions" text;--> statement-breakpoint
-- An idempotency key is its requester's own: one gateway can no longer take another's keys.
ALTER TABLE "proposals" DROP CONSTRAINT "proposals_idempotency_key";--> statement-breakpoint
ALTER TABLE "proposals" ADD CONSTRAINT "proposals_requester_idempotency_key" UNIQUE("log_id","requester","idempotency_key");
