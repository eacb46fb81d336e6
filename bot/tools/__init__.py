"""Every tool the model can call, one entry each: memory, skills and actions."""

from bot.tools.base import BuiltinTool, Call, Kind, Suspend, Tool, Toolbox, ToolOutput

__all__ = ["BuiltinTool", "Call", "Kind", "Suspend", "Tool", "ToolOutput", "Toolbox"]
