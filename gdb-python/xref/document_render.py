"""Readable text of the one-shot commands' JSON documents (docs/json.md):
maps, resolve, doctor. The same shape as lldb-plugin/document_render.cpp."""

import json


def _text(data, key, otherwise=""):
    value = data.get(key) if isinstance(data, dict) else None
    if value is None:
        return otherwise
    return value if isinstance(value, str) else json.dumps(value)


def _maps(data, lines):
    lines.append("modules:")
    for module in data.get("modules") or []:
        line = "  " + _text(module, "name").ljust(24) + " "
        if "image_error" in module:
            line += "(" + _text(module, "image_error") + ")"
        else:
            line += "load_bias " + _text(module, "load_bias", "?").ljust(16) + "  " + _text(module, "path")
            if module.get("main_executable"):
                line += "  [main]"
        lines.append(line)
    lines.append("mappings:")
    for mapping in data.get("mappings") or []:
        path = _text(mapping, "path") or "[anonymous]"
        lines.append("  %s-%s %s %10s  %s%s" % (_text(mapping, "start"), _text(mapping, "end"), _text(mapping, "perms"),
                                              _text(mapping, "offset"), path,
                                              " (deleted)" if mapping.get("deleted") else ""))


def _resolve(data, lines):
    for address in data.get("addresses") or []:
        line = _text(address, "live_va") + "  "
        mapping = address.get("mapping")
        if not isinstance(mapping, dict):
            lines.append(line + "not mapped in the process")
            continue
        line += _text(mapping, "perms") + " " + _text(mapping, "path", "[anonymous]") + "  " + _text(address, "kind")
        if address.get("file_offset") is not None:
            line += "  file_offset " + _text(address, "file_offset")
        lines.append(line)
        for candidate in address.get("candidates") or []:
            detail = "    " + _text(candidate, "module") + " static " + _text(candidate, "static_va")
            function = candidate.get("function")
            if isinstance(function, dict):
                detail += "  " + _text(function, "demangled", _text(function, "name"))
                offset = _text(function, "offset")
                if offset and offset != "0x0":
                    detail += "+" + offset
            instruction = candidate.get("instruction")
            if isinstance(instruction, dict):
                if instruction.get("is_start"):
                    detail += "  [instruction start: " + _text(instruction, "text") + "]"
                else:
                    detail += "  [MID-INSTRUCTION: inside the instruction at %s (%s)]" % (
                        _text(instruction, "start"), _text(instruction, "text"))
            lines.append(detail)


def _doctor(data, lines):
    lines.append("kernel " + _text(data, "kernel_release"))
    for check in data.get("checks") or []:
        lines.append(_text(check, "name").ljust(22) + _text(check, "status").ljust(8) + _text(check, "detail"))
        hint = _text(check, "hint")
        if hint:
            lines.append(" " * 30 + "hint: " + hint)


def render_document(document):
    lines = []
    operation = _text(document, "operation")
    data = document.get("data")
    process = document.get("process")
    if operation != "doctor" and isinstance(process, dict):
        lines.append("pid %s  comm %s  exe %s  match %s" % (_text(process, "pid"), _text(process, "comm"),
                                                            _text(process, "exe_path"), _text(process, "binary_match")))
    if isinstance(data, dict):
        render = {"live_maps": _maps, "live_resolve": _resolve, "doctor": _doctor}.get(operation)
        if render is not None:
            render(data, lines)
        else:
            lines.extend(json.dumps(data, indent=2).split("\n"))
    for warning in document.get("warnings") or []:
        lines.append("xref: warning: " + (warning if isinstance(warning, str) else json.dumps(warning)))
    for stop in document.get("stops") or []:
        lines.append("xref: stopped early: " + (stop if isinstance(stop, str) else json.dumps(stop)))
    return lines


def document_error(document):
    error = document.get("error")
    if not isinstance(error, dict):
        return ""
    message = _text(error, "message", "error")
    if isinstance(error.get("column"), int) and error["column"] > 0:
        message += " (column %d)" % error["column"]
    if _text(error, "hint"):
        message += "; " + _text(error, "hint")
    return message
