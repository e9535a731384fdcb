-- Independence that means something (docs/verification.md): a tool registration declares the
-- named systems it writes to, and an observation may name where its result came from. Both
-- are nullable: a record that declares neither leaves the field out of its payload, so every
-- row written before this migration still rebuilds its event byte for byte.
ALTER TABLE "observations" ADD COLUMN "result_source" text;--> statement-breakpoint
ALTER TABLE "tools" ADD COLUMN "writes" text;