-- Pinned tool definitions (#40, rug-pull defence). Both columns are nullable: a registration
-- without a definition leaves the fields out of its payload, so every row written before this
-- migration still rebuilds its event byte for byte.
--
-- tools.definition_sha256: SHA-256 of the approved definition (name, description, input schema,
--   annotations, canonical JSON), pinned by the gateway that first saw it or by an operator.
-- tools.changed_definition_sha256: a differing definition a gateway saw since, awaiting approval.
ALTER TABLE "tools" ADD COLUMN "definition_sha256" text;--> statement-breakpoint
ALTER TABLE "tools" ADD COLUMN "changed_definition_sha256" text;