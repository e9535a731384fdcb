#!/usr/bin/env bash
# The five-minute tour of Vouch over plain HTTP: the calls a gateway, an approver, a verifier
# and an auditor make for one refund. Run it against `npm start`:
#
#   ADMIN=<the admin key npm start printed> bash docs/tour/try-it.sh
#
# VOUCH_URL (default http://localhost:8787) points it elsewhere. Each run uses new identities
# and a new idempotency key, so it can run again on the same server. docs/tour/try-it.test.ts
# runs this very file against a real server, so what you read here works.
set -euo pipefail
URL=${VOUCH_URL:-http://localhost:8787}
: "${ADMIN:?set ADMIN to the admin key that npm start printed}"
RUN=${RUN:-$(date +%s)-$$}

# call METHOD PATH KEY [JSON]: one request; prints the JSON answer, or stops the tour with
# the error Vouch answered (code and message) on stderr.
call() {
  local out
  if ! out=$(curl -sS --fail-with-body -X "$1" "$URL$2" -H "authorization: Bearer $3" \
    -H 'content-type: application/json' ${4:+-d "$4"}); then
    echo "$1 $2 failed: $out" >&2
    return 1
  fi
  printf '%s\n' "$out"
}
# field .a.b: one field of the JSON on stdin (node is there wherever Vouch runs).
field() {
  node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
    const v = process.argv[1].split(".").filter(Boolean).reduce((o, k) => o?.[k], JSON.parse(s));
    console.log(typeof v === "string" ? v : JSON.stringify(v)); });' "$1"
}
key() { # IDENTITY ROLES_JSON [EXTRA_JSON_FIELDS]: issue a key, print its secret (shown once)
  call POST /v1/keys "$ADMIN" "{\"identity\":\"$1\",\"roles\":$2${3:+,$3}}" | field .secret
}

echo "1. keys for each party (the secret is printed once; only its SHA-256 is stored)"
GATEWAY=$(key "agent:billing-bot-$RUN" '["gateway"]' '"scopes":["billing:write"],"environments":["production"]')
ALICE=$(key "user:alice-$RUN" '["approver"]')
VERIFIER=$(key "service:reconciler-$RUN" '["verifier"]')
AUDITOR=$(key "user:audrey-$RUN" '["auditor"]')

echo "2. the admin registers the tool: compensatable, needs billing:write, approval required"
call POST /v1/tools "$ADMIN" '{"server_id":"billing","tool_name":"refund.issue","side_effect":"compensatable",
  "required_scopes":["billing:write"],"allowed_environments":["production"],"approval_required":true}' >/dev/null

echo "3. the gateway proposes a refund; policy answers require_approval"
PROPOSAL=$(call POST /v1/proposals "$GATEWAY" "{\"idempotency_key\":\"refund-A-119-$RUN\",
  \"action\":\"refund.issue\",\"server_id\":\"billing\",\"tool_name\":\"refund.issue\",
  \"target\":{\"kind\":\"order\",\"id\":\"A-119\",\"env\":\"production\"},
  \"arguments\":{\"order_id\":\"A-119\",\"amount\":4200,\"currency\":\"EUR\"},\"side_effect\":\"compensatable\",
  \"postconditions\":[{\"name\":\"refund.recorded\",\"params\":{\"order_id\":\"A-119\",\"amount\":4200}}]}")
PROPOSAL_ID=$(echo "$PROPOSAL" | field .proposal.id)
APPROVAL_ID=$(echo "$PROPOSAL" | field .approval.id)
echo "   verdict: $(echo "$PROPOSAL" | field .decision.verdict), approval request $APPROVAL_ID"

echo "4. alice sees exactly what will run, and approves it (the gateway could not)"
call GET "/v1/approvals/$APPROVAL_ID" "$ALICE" | field .payload.arguments
call POST "/v1/approvals/$APPROVAL_ID/approve" "$ALICE" '{"comment":"customer called"}' >/dev/null

echo "5. the gateway claims the approval, calls the tool, and posts what it really returned"
call POST "/v1/proposals/$PROPOSAL_ID/authorize" "$GATEWAY" >/dev/null
OBSERVATION_ID=$(call POST /v1/observations "$GATEWAY" "{\"proposal_id\":\"$PROPOSAL_ID\",
  \"outcome\":\"succeeded\",\"result\":{\"refund_id\":\"rf_77\"},\"transport_status\":200}" | field .observation.id)

echo "   outcome before any check: $(call GET "/v1/proposals/$PROPOSAL_ID" "$GATEWAY" | field .outcome)"
echo "6. a verifier reads the postcondition back from billing's own ledger and records the check"
# (With verifier plugins configured in vouch.config.json, POST /v1/observations/{id}/verify runs
# them instead; with none configured every postcondition stays unproven: "inconclusive".)
call POST /v1/verifications "$VERIFIER" "{\"observation_id\":\"$OBSERVATION_ID\",\"checks\":[{
  \"name\":\"refund.recorded\",\"status\":\"pass\",\"source\":\"billing-ledger\",
  \"evidence\":{\"refunded_amount\":4200}}]}" | field .verification_status.status

STORY=$(call GET "/v1/proposals/$PROPOSAL_ID" "$AUDITOR")
echo "7. the story: stage $(echo "$STORY" | field .stage), outcome $(echo "$STORY" | field .outcome)"

echo "8. an auditor verifies the whole log: chain, Merkle tree, checkpoints, record tables"
echo "   ok: $(call GET /v1/logs/default/verify "$AUDITOR" | field .ok)"
