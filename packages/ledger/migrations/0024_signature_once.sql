CREATE UNIQUE INDEX "approval_resolutions_signature_once" ON "approval_resolutions" USING btree ("log_id",md5("signature"));--> statement-breakpoint
CREATE UNIQUE INDEX "decisions_signature_once" ON "decisions" USING btree ("log_id",md5("signature"));--> statement-breakpoint
CREATE UNIQUE INDEX "verifications_signature_once" ON "verifications" USING btree ("log_id",md5("signature"));