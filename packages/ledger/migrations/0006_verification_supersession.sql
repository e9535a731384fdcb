ALTER TABLE "verifications" ADD COLUMN "undeclared" text;--> statement-breakpoint
ALTER TABLE "verifications" ADD COLUMN "held" text;--> statement-breakpoint
ALTER TABLE "verifications" ADD COLUMN "supersedes" text;--> statement-breakpoint
ALTER TABLE "verifications" ADD COLUMN "reason" text;--> statement-breakpoint
ALTER TABLE "verifications" ADD CONSTRAINT "verifications_held" CHECK ("verifications"."held" is null or "verifications"."held" in ('OUTCOME_UNKNOWN'));--> statement-breakpoint
ALTER TABLE "verifications" ADD CONSTRAINT "verifications_supersession" CHECK (("verifications"."supersedes" is null) = ("verifications"."reason" is null));