#include "manual/bash_completion.h"

namespace xref::manual {
namespace {

// A word for the script, in single quotes.
std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string joined_path(const CommandEntry& command) {
  std::string path;
  for (const std::string& word : command.path) path += (path.empty() ? "" : " ") + word;
  return path;
}

// What an option's (or positional's) value is: pid, file, code,
// choice:V1 V2 ..., or "" (anything; nothing to offer).
std::string value_kind(const CommandEntry& command, const OptionEntry& option, const CompletionSite& site) {
  if (!option.choices.empty()) {
    std::string kind = "choice:";
    for (size_t i = 0; i < option.choices.size(); ++i) kind += (i == 0 ? "" : " ") + option.choices[i];
    return kind;
  }
  if (option.value_name == "PID") return "pid";
  if (option.value_name == "FILE") return "file";
  const std::string name = option.names.empty() ? "" : option.long_name();
  if (site.takes_code && site.takes_code(joined_path(command), name)) return "code";
  return "";
}

// _xref_option CMD WORD: sets _xref_n to the words WORD takes (0 for a
// flag or no option, * for any number) and _xref_kind to their kind.
std::string option_function(const std::vector<const CommandEntry*>& commands, const CompletionSite& site) {
  std::string text = "_xref_option() {\n  _xref_n=0 _xref_kind=\n  case \"$1 $2\" in\n";
  for (const CommandEntry* command : commands) {
    for (const OptionEntry& option : command->options) {
      if (option.names.empty() || option.values == 0) continue;
      std::string patterns;
      for (const std::string& name : option.names) {
        patterns += (patterns.empty() ? "" : "|") + shell_quoted(joined_path(*command) + " " + name);
      }
      const std::string count = option.repeats ? "'*'" : std::to_string(option.values);
      text += "    " + patterns + ") _xref_n=" + count + " _xref_kind=" + shell_quoted(value_kind(*command, option, site)) +
              " ;;\n";
    }
  }
  return text + "  esac\n}\n";
}

// _xref_words CMD: sets _xref_options, _xref_subcommands and
// _xref_positional (the kind of the command's positional words).
std::string words_function(const std::vector<const CommandEntry*>& commands, const CompletionSite& site) {
  std::string text = "_xref_words() {\n  _xref_options= _xref_subcommands= _xref_positional=\n  case \"$1\" in\n";
  for (const CommandEntry* command : commands) {
    std::string options, subcommands, positional;
    for (const OptionEntry& option : command->options) {
      for (const std::string& name : option.names) options += (options.empty() ? "" : " ") + name;
      if (option.names.empty() && positional.empty()) positional = value_kind(*command, option, site);
    }
    for (const CommandEntry& sub : command->subcommands) {
      subcommands += (subcommands.empty() ? "" : " ") + sub.path.back();
    }
    text += "    " + shell_quoted(joined_path(*command)) + ")\n      _xref_options=" + shell_quoted(options) +
            "\n      _xref_subcommands=" + shell_quoted(subcommands) + "\n      _xref_positional=" + shell_quoted(positional) +
            " ;;\n";
  }
  return text + "  esac\n}\n";
}

// The part that does not depend on the commands.
constexpr const char* kDriver = R"BASH(
# _xref_values KIND VALUE: COMPREPLY = the values of that kind starting with
# VALUE. Function names come from the helper, for the process of the
# --pid on the line.
_xref_values() {
  local kind=$1 value=$2 p pids=()
  case $kind in
    pid)
      for p in /proc/[0-9]*; do pids+=("${p#/proc/}"); done
      mapfile -t COMPREPLY < <(compgen -W "${pids[*]}" -- "$value") ;;
    file)
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -f -- "$value") ;;
    choice:*)
      mapfile -t COMPREPLY < <(compgen -W "${kind#choice:}" -- "$value") ;;
    code)
      [[ -n $_xref_pid ]] || return 0
      local helper=${_xref_words_typed[0]}
      [[ $helper == "~/"* ]] && helper=$HOME/${helper#"~/"}
      command -v "$helper" >/dev/null 2>&1 || return 0
      mapfile -t COMPREPLY < <("$helper" _complete functions --pid "$_xref_pid" --prefix "$value" 2>/dev/null) ;;
  esac
}

# Bash replaces only the text after the last COMP_WORDBREAKS character of
# the word (the ':' of module:function, the '=' of --pid=N): drop what
# comes before it from every reply.
_xref_trim_replies() {
  local typed=$1 head= i c
  for ((i = ${#typed} - 1; i >= 0; i--)); do
    c=${typed:i:1}
    if [[ $c != [[:space:]] && $COMP_WORDBREAKS == *"$c"* ]]; then
      head=${typed:0:i+1}
      break
    fi
  done
  [[ -n $head ]] || return 0
  for i in "${!COMPREPLY[@]}"; do COMPREPLY[i]=${COMPREPLY[i]#"$head"}; done
}

_xref() {
  COMPREPLY=()
  # The words up to the cursor, split at blanks only: --pid=4242 and
  # libc.so.6:str are one word each, as the helper reads them.
  local line=${COMP_LINE:0:COMP_POINT}
  local -a _xref_words_typed
  read -ra _xref_words_typed <<<"$line"
  [[ -z $line || $line == *[[:space:]] ]] && _xref_words_typed+=("")
  local count=${#_xref_words_typed[@]}
  local cur=${_xref_words_typed[count - 1]}
  local cmd= word pending= left=0 kind= positionals=0 i _xref_pid=
  for ((i = 1; i < count - 1; i++)); do
    word=${_xref_words_typed[i]}
    case $word in
      --pid=*) _xref_pid=${word#--pid=} ;;
      --pid | -p) _xref_pid=${_xref_words_typed[i + 1]} ;;
      -p[0-9]*) _xref_pid=${word#-p} ;;
    esac
  done
  for ((i = 1; i < count - 1; i++)); do
    word=${_xref_words_typed[i]}
    if [[ -n $pending ]]; then
      if [[ $left == '*' ]]; then
        [[ $word == -* ]] || continue
        pending=
      else
        ((left--))
        ((left > 0)) || pending=
        continue
      fi
    fi
    if [[ $word == -* ]]; then
      [[ $word == *=* ]] && continue
      _xref_option "$cmd" "$word"
      [[ $_xref_n == 0 ]] || { pending=$word left=$_xref_n kind=$_xref_kind; }
      continue
    fi
    _xref_words "$cmd"
    if ((positionals == 0)) && [[ " $_xref_subcommands " == *" $word "* ]]; then
      cmd=${cmd:+$cmd }$word
    else
      ((positionals++))
    fi
  done
  _xref_words "$cmd"
  local value=$cur prefix=
  if [[ -n $pending && ! ($left == '*' && $cur == -*) ]]; then
    _xref_values "$kind" "$value"
  elif [[ $cur == --*=* ]]; then
    _xref_option "$cmd" "${cur%%=*}"
    prefix=${cur%%=*}= value=${cur#*=}
    [[ $_xref_n == 0 ]] || _xref_values "$_xref_kind" "$value"
  elif [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$_xref_options" -- "$cur")
  else
    [[ -n $_xref_positional ]] && _xref_values "$_xref_positional" "$value"
    if ((positionals == 0)) && [[ -n $_xref_subcommands ]]; then
      mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -W "$_xref_subcommands" -- "$cur")
    fi
  fi
  if [[ -n $prefix ]]; then
    for i in "${!COMPREPLY[@]}"; do COMPREPLY[i]=$prefix${COMPREPLY[i]}; done
  fi
  _xref_trim_replies "$cur"
  return 0
}

complete -F _xref xref
)BASH";

}  // namespace

std::string bash_completion(const CommandEntry& root, const CompletionSite& site) {
  std::string text =
      "# bash completion for xref: its commands, options and their values.\n"
      "# Written by `xref _generate bash-completion` (or `xref completion bash`)\n"
      "# from the CLI11 definitions xref parses its command line with; do not edit.\n\n";
  const std::vector<const CommandEntry*> commands = all_commands(root);
  text += option_function(commands, site);
  text += "\n" + words_function(commands, site);
  return text + kDriver;
}

}  // namespace xref::manual
