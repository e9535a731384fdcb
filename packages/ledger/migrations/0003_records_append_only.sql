-- Record tables are append-only in the database itself, like audit_events: a state change
-- (an approval answered, used) is a new row, never an UPDATE, and no row is ever deleted.
-- Uses vouch_refuse_change() from 0001_core_append_only.
CREATE TRIGGER tools_append_only BEFORE UPDATE OR DELETE ON tools
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER tools_no_truncate BEFORE TRUNCATE ON tools
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER proposals_append_only BEFORE UPDATE OR DELETE ON proposals
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER proposals_no_truncate BEFORE TRUNCATE ON proposals
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER decisions_append_only BEFORE UPDATE OR DELETE ON decisions
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER decisions_no_truncate BEFORE TRUNCATE ON decisions
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER approval_requests_append_only BEFORE UPDATE OR DELETE ON approval_requests
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER approval_requests_no_truncate BEFORE TRUNCATE ON approval_requests
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER approval_resolutions_append_only BEFORE UPDATE OR DELETE ON approval_resolutions
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER approval_resolutions_no_truncate BEFORE TRUNCATE ON approval_resolutions
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER approval_uses_append_only BEFORE UPDATE OR DELETE ON approval_uses
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER approval_uses_no_truncate BEFORE TRUNCATE ON approval_uses
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER observations_append_only BEFORE UPDATE OR DELETE ON observations
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER observations_no_truncate BEFORE TRUNCATE ON observations
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER refused_executions_append_only BEFORE UPDATE OR DELETE ON refused_executions
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER refused_executions_no_truncate BEFORE TRUNCATE ON refused_executions
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER verifications_append_only BEFORE UPDATE OR DELETE ON verifications
  FOR EACH ROW EXECUTE FUNCTION vouch_refuse_change();
--> statement-breakpoint
CREATE TRIGGER verifications_no_truncate BEFORE TRUNCATE ON verifications
  FOR EACH STATEMENT EXECUTE FUNCTION vouch_refuse_change();
