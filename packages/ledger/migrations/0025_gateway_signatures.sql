ALTER TABLE "execution_claims" ADD COLUMN "signature" text;--> statement-breakpoint
ALTER TABLE "observations" ADD COLUMN "signature" text;--> statement-breakpoint
ALTER TABLE "proposals" ADD COLUMN "signature" text;