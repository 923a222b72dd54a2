"""Tab completion for the xref LLDB plugin (docs/lldb.md, "Tab completion").

The plugin (libxref_lldb.so) imports this file when LLDB has Python. LLDB 19
completes a Python "parsed" command from what it declares (its option names;
target symbols where a value or positional word is of a symbol type) and
offers no other completion hook, to plugins or to Python. So each helper
command that has options is declared here from the helper's own definitions
(`xref _complete`: the `complete` request, docs/protocol.md), and what LLDB
parsed goes back to the plugin (`xref _run`), which runs it as it runs every
command. Nothing here writes text for users: the plugin and the helper do.
"""
import json
import string

import lldb

# The stop hook's `xref show --new` (the plugin's own, lldb-plugin/plugin.cpp).
PLUGIN_OPTIONS = {"show": [{"name": "--new", "short": "", "values": 0, "code": False,
                            "help": "what is new since the last stop (the stop hook's)"}]}


def _hex(words):
    return json.dumps(words).encode().hex()


def _short_options(options):
    """Unique one-letter options, as LLDB requires: the helper's (the first
    option to claim a letter keeps it: `profile --out` and `profile report
    --output` are both -o), else a free letter."""
    taken = {option["short"] for option in options if option["short"]}
    free = [letter for letter in string.ascii_letters if letter not in taken]
    shorts = {}
    used = set()
    for option in options:
        if option["short"] and option["short"] not in used:
            shorts[option["name"]] = option["short"]
            used.add(option["short"])
        elif free:
            shorts[option["name"]] = free.pop(0)
    return shorts


class XrefCommand:
    """One helper command as LLDB parses it; the class attributes are set per command."""
    name = ""
    help = ""
    options = []
    positional_code = False

    def __init__(self, debugger, internal_dict):
        self.given = []

    def get_short_help(self):
        return self.help or "the helper's `%s` (`xref %s --help`: every option)" % (self.name, self.name)

    def get_flags(self):
        return 0

    def get_options_definition(self):
        shorts = _short_options(self.options)
        definition = {}
        for option in self.options:
            if option["name"] not in shorts:
                continue  # more options than letters: the plugin's `xref _run` still takes them typed whole
            entry = {"short_option": shorts[option["name"]], "required": False,
                     "help": option["help"] or option["name"], "default": None}
            # LLDB 19 gives an option a value whenever "value_type" is there at all.
            if option["values"]:
                entry["value_type"] = lldb.eArgTypeSymbol if option["code"] else lldb.eArgTypeValue
                entry["completion_type"] = lldb.eSymbolCompletion if option["code"] else lldb.eNoCompletion
            definition[option["name"][2:]] = entry
        return definition

    def get_args_definition(self):
        kind = lldb.eArgTypeSymbol if self.positional_code else lldb.eArgTypeValue
        return [[{"arg_type": kind, "repeat": "star"}]]

    def option_parsing_started(self):
        self.given = []

    def set_option_value(self, exe_ctx, name, value):
        option = next((option for option in self.options if option["name"] == "--" + name), None)
        if option is None:
            return False
        if not option["values"]:
            self.given.append("--" + name)
        elif value.startswith("-"):
            self.given.append("--%s=%s" % (name, value))  # a value, not an option
        else:
            self.given += ["--" + name, value]
        # LLDB gives an option one value; the others of `--fetch-at VA SPEC`
        # are the words after it, which LLDB counts as positional.
        self.given += [None] * (option["values"] - 1)
        return True

    def __call__(self, debugger, args, exe_ctx, result):
        positional = [args.GetItemAtIndex(i).GetStringValue(1 << 20) for i in range(args.GetSize())]
        given = []
        for word in self.given:
            if word is None and positional:
                word = positional.pop(0)
            if word is not None:
                given.append(word)
        # Positional words before the options, so that an option taking a list
        # takes none of them; after `--` when one looks like an option (LLDB
        # saw `--` before it).
        if any(word.startswith("-") for word in positional):
            words = [self.name] + given + ["--"] + positional
        else:
            words = [self.name] + positional + given
        debugger.GetCommandInterpreter().HandleCommand("xref _run " + _hex(words), exe_ctx, result)


def _register(debugger, command):
    options = command["options"] + PLUGIN_OPTIONS.get(command["name"], [])
    if not options:
        return
    class_name = "Xref_" + "".join(c if c.isalnum() else "_" for c in command["name"])
    globals()[class_name] = type(class_name, (XrefCommand,), {
        "name": command["name"], "help": command.get("help", ""), "options": options,
        "positional_code": command["positional_code"]})
    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(
        "command script add -p -c %s.%s xref %s" % (__name__, class_name, command["name"]), result)


def __lldb_init_module(debugger, internal_dict):
    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand("xref _complete", result)
    if not result.Succeeded():
        # The plugin keeps its own commands (no option completion); it says why on use.
        return
    for command in json.loads(result.GetOutput())["commands"]:
        _register(debugger, command)
