-- Level-0 Merkle rows are the leaves, and a leaf is sha256(0x00 || event hash): the event row
-- already holds it. They were half of merkle_nodes, written in every append and read in every
-- verification, so they go. Removing derived rows is the one DELETE this table ever sees, made
-- here, by the owner, with its append-only trigger off for this statement only.
ALTER TABLE "merkle_nodes" DISABLE TRIGGER "merkle_nodes_append_only";--> statement-breakpoint
DELETE FROM "merkle_nodes" WHERE "level" = 0;--> statement-breakpoint
ALTER TABLE "merkle_nodes" ENABLE TRIGGER "merkle_nodes_append_only";--> statement-breakpoint
ALTER TABLE "merkle_nodes" ADD CONSTRAINT "merkle_nodes_interior" CHECK ("merkle_nodes"."level" >= 1);
