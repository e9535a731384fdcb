ALTER TABLE "tools" ADD COLUMN "signature" text;--> statement-breakpoint
CREATE UNIQUE INDEX "tools_signature_once" ON "tools" USING btree ("log_id",md5("signature"));