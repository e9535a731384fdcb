/**
 * The MCP method of a tool call, for the handlers that receive one from the agent (the SDK
 * 2.x registers and matches handlers by method name). Named once here, so the execute-path
 * guard, which flags the name wherever an upstream could be called, has one allowed place.
 */
export const TOOLS_CALL = 'tools/call' as const;
