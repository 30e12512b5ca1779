"""A program that registers one URN twice, which the engine refuses."""

from pulumi_command import local

local.Command("twice", create="true")
local.Command("twice", create="true")
