ALTER TABLE "approval_resolutions" ADD COLUMN "signature" text;--> statement-breakpoint
ALTER TABLE "decisions" ADD COLUMN "signature" text;--> statement-breakpoint
ALTER TABLE "verifications" ADD COLUMN "signature" text;