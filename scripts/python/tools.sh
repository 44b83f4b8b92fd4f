# Sourced by the check scripts (api-fuzz, check-migrations, check-deploy, check-openapi): the
# Python tools each one runs live in a virtual environment of its own under the build directory
# ($CARGO_TARGET_DIR/tools/NAME/venv), installed from the lock file scripts/python/NAME.txt
# (every package, transitive ones included, pinned with its hashes; `pip install
# --require-hashes`). Nothing is installed into the machine's interpreter. The venv is rebuilt
# when the lock file or the interpreter changes (their hash and version are its stamp).
#
# To change a tool's version: edit scripts/python/NAME.in, then regenerate the lock with
# pip-tools, from the repository's root:
#   pip-compile --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url \
#       --no-emit-find-links --output-file scripts/python/NAME.txt scripts/python/NAME.in
#
# JOBBOARD_TOOLS_PYTHON chooses the interpreter (default: python3).

# tool_venv NAME → the venv's path on stdout, installed and current; progress on stderr.
tool_venv() {
    local name="$1"
    local lock="scripts/python/$name.txt"
    local py="${JOBBOARD_TOOLS_PYTHON:-python3}"
    local root
    root="$(mkdir -p "${CARGO_TARGET_DIR:-target}/tools/$name" && cd "${CARGO_TARGET_DIR:-target}/tools/$name" && pwd)"
    local venv="$root/venv"
    local version stamp
    version="$("$py" -c 'import sys; print(sys.version.split()[0])')" || {
        echo "$name: no Python interpreter ($py)" >&2
        return 1
    }
    stamp="$(sha256sum "$lock" | cut -d' ' -f1) python $version"
    if [ "$(cat "$venv/.stamp" 2>/dev/null)" = "$stamp" ] && "$venv/bin/python" -c '' 2>/dev/null; then
        echo "$venv"
        return 0
    fi
    echo "==> $name: installing scripts/python/$name.txt into $venv (Python $version)" >&2
    rm -rf "$venv"
    if ! "$py" -m venv "$venv" >&2; then
        # Debian's own Python keeps venv in a package of its own.
        rm -rf "$venv"
        apt-get install -y -q python3-venv >/dev/null
        "$py" -m venv "$venv" >&2
    fi
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
        --require-hashes --no-deps -r "$lock" >&2 || {
        echo "$name: pip could not install scripts/python/$name.txt into $venv" >&2
        return 1
    }
    echo "$stamp" >"$venv/.stamp"
    echo "$venv"
}

# tool_crashed CODE LOG → true if the run that exited CODE with output LOG crashed (the tool's
# own fault, not a finding): a Python traceback, a Rust panic (101), a signal or a command that
# could not run (126 and above).
tool_crashed() {
    local code="$1" log="$2"
    [ "$code" -eq 0 ] && return 1
    [ "$code" -ge 126 ] || [ "$code" -eq 101 ] ||
        grep -q -E '^Traceback \(most recent call last\):|panicked at ' "$log"
}

# crash_line SCRIPT TOOL CODE LOG: the one line that names a crash, its error and last lines.
crash_line() {
    local last error
    last="$(grep -v '^[[:space:]]*$' "$4" | tail -n 3 | sed 's/^[[:space:]]*//' | paste -s -d '|' | sed 's/|/ | /g')"
    # The exception a Python traceback ends with, or a Rust panic's message.
    error="$(grep -E '^[[:space:]]*([A-Za-z_.]*(Error|Exception)[A-Za-z]*: |thread .* panicked at )' "$4" | tail -n 1 | sed 's/^[[:space:]]*//')"
    echo "$1: $2 crashed (exit $3), a fault of the tool, not a finding;${error:+ error: $error;} last lines: $last" >&2
}

# run_tool SCRIPT TOOL COMMAND… : runs COMMAND (its output shown); a crash is named in one line
# and the command is run once more, as it was (the same arguments, so the same seed). Returns
# the command's exit code: that of the second run after a crash.
run_tool() {
    local script="$1" tool="$2"
    shift 2
    local log code
    log="$(mktemp)"
    if "$@" 2>&1 | tee "$log"; then code=0; else code=${PIPESTATUS[0]}; fi
    if tool_crashed "$code" "$log"; then
        crash_line "$script" "$tool" "$code" "$log"
        echo "$script: running $tool once more, with the same arguments" >&2
        if "$@" 2>&1 | tee "$log"; then code=0; else code=${PIPESTATUS[0]}; fi
        if tool_crashed "$code" "$log"; then
            crash_line "$script" "$tool" "$code" "$log"
        fi
    fi
    rm -f "$log"
    return "$code"
}
