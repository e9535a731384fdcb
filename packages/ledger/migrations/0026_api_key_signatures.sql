ALTER TABLE "api_key_revocations" ADD COLUMN "signature" text;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "signature" text;