# bash completion for vaultctl                              -*- shell-script -*-
#
# Commands, options and client names from vaultctl's own help; tool names
# and their parameters from `vaultctl tools` (no daemon needed); note names
# from the running daemon (`vaultctl notes PREFIX`): nothing, at once, when
# none runs.

# Options listed in a help text (lines "  --opt" or "  -x, --opt").
_vaultctl_opts()
{
    sed -n 's/^  \(-[a-zA-Z], \)\{0,1\}\(--[a-z-]*\).*/\2/p'
}

# COMPREPLY: note names for $1, shell-escaped; the rest of the arguments
# choose the vault (--vault DIR, --socket PATH).
_vaultctl_notes()
{
    local prefix=${1//\\/} IFS=$'\n' n
    shift
    prefix=${prefix#[\"\']}
    COMPREPLY=()
    for n in $(timeout 2 "$_vaultctl_cmd" "$@" notes --limit 200 -- "$prefix" 2>/dev/null); do
        COMPREPLY+=("$(printf '%q' "$n")")
    done
}

# COMPREPLY: the tool names that start with $1 (no daemon needed).
_vaultctl_tools()
{
    COMPREPLY=($(compgen -W "$("$_vaultctl_cmd" tools 2>/dev/null |
        sed -n 's/^\([a-z_][a-z_]*\)(.*/\1/p')" -- "$1"))
}

_vaultctl()
{
    local cur prev words cword
    _init_completion -n =: || return
    local _vaultctl_cmd=${words[0]}

    local i cmd="" cmdi=0
    local -a sel=()
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
        --vault | --socket)
            sel+=("${words[i]}" "${words[i + 1]}")
            ((i++))
            ;;
        --limit | --session | --since) ((i++)) ;;
        -*) ;;
        *)
            cmd=${words[i]}
            cmdi=$i
            break
            ;;
        esac
    done

    case $prev in
    --vault | --mount)
        _filedir -d
        return
        ;;
    --socket | --config)
        _filedir
        return
        ;;
    --limit | --name | --session | --since)
        return
        ;;
    --client)
        COMPREPLY=($(compgen -W "$("$_vaultctl_cmd" init --help 2>/dev/null |
            sed -n 's/^Clients: //p')" -- "$cur"))
        return
        ;;
    esac

    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$("$_vaultctl_cmd" --help 2>/dev/null |
                _vaultctl_opts)" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$("$_vaultctl_cmd" --help 2>/dev/null |
                sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z]*\).*/\1/p')" -- "$cur"))
        fi
        return
    fi

    case $cmd in
    init)
        COMPREPLY=($(compgen -W "$("$_vaultctl_cmd" init --help 2>/dev/null |
            _vaultctl_opts)" -- "$cur"))
        ;;
    tools)
        _vaultctl_tools "$cur"
        ;;
    call)
        if ((cword == cmdi + 1)); then
            _vaultctl_tools "$cur"
        elif [[ $cur == *=* ]]; then
            # The value of an argument that names a note.
            local key=${cur%%=*}
            case ${key%[:@]} in
            name | old_name)
                _vaultctl_notes "${cur#*=}" "${sel[@]}"
                ;;
            esac
        else
            local tool=${words[cmdi + 1]}
            COMPREPLY=($(compgen -S = -W "$("$_vaultctl_cmd" tools 2>/dev/null |
                sed -n "s/^$tool(\(.*\)).*/\1/p" | tr ',' '\n' |
                sed 's/^ *\([a-z_]*\).*/\1/')" -- "$cur"))
            compopt -o nospace
        fi
        ;;
    history)
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--limit --json" -- "$cur"))
        else
            _vaultctl_notes "$cur" "${sel[@]}"
        fi
        ;;
    show)
        _vaultctl_notes "$cur" "${sel[@]}"
        local j
        for j in "${!COMPREPLY[@]}"; do COMPREPLY[j]+=@; done
        compopt -o nospace
        ;;
    notes)
        _vaultctl_notes "$cur" "${sel[@]}"
        ;;
    check)
        COMPREPLY=($(compgen -W "--offline --json" -- "$cur"))
        ;;
    violations)
        COMPREPLY=($(compgen -W "--limit --json" -- "$cur"))
        ;;
    changes)
        COMPREPLY=($(compgen -W "--session --since --limit --json" -- "$cur"))
        ;;
    undo)
        COMPREPLY=($(compgen -W "--session --since --dry-run --json" -- "$cur"))
        ;;
    esac
} &&
    complete -F _vaultctl vaultctl
