"""Mocks of the agent's world: HTTP APIs, command-line programs and MCP servers, one instance per
trial, every call recorded (docs/mocks.md).

    from anpord.mocks import http_mock, cli_mock, mcp_mock, mcp_tool
"""

from ._declare import CliMock, HttpMock, McpMock, McpTool, cli_mock, http_mock, mcp_mock, mcp_tool

__all__ = ["CliMock", "HttpMock", "McpMock", "McpTool", "cli_mock", "http_mock", "mcp_mock", "mcp_tool"]
