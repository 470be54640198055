"""A trial's tools as an MCP server: streamable HTTP on 127.0.0.1, stdio, in process.

- :class:`TrialTools` builds the trial's low-level ``mcp`` Server (in process: hand it to
  ``mcp.Client`` directly, over the SDK's memory streams);
- :class:`~chaoseval.channels.mcp.wire.TrialEndpoint` serves it over streamable HTTP with the
  trial's transport-layer faults; :class:`chaoseval.channels.hub.ToolHub` mounts every trial of
  a run on one 127.0.0.1 port, and :func:`chaoseval.channels.hub.serve_mcp` is one trial on a
  server of its own;
- ``chaoseval mcp-relay URL`` (:mod:`chaoseval.channels.mcp.relay`) is a stdio MCP server that
  relays to a trial's URL, for agents that launch their MCP servers as processes.
"""

from chaoseval.channels.mcp.server import ERROR_META, Exchange, TrialTools, error_text

__all__ = ["ERROR_META", "Exchange", "TrialTools", "error_text"]
