# bash completion for rebound(1). The subcommands come from `rebound help`
# and each one's options and words from `rebound CMD --help`, so completion
# follows the binary it completes.
_rebound()
{
    local cur prev bin cmd words_list
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    bin=${COMP_WORDS[0]}
    COMPREPLY=()
    if [[ $COMP_CWORD -eq 1 ]]; then
        words_list=$("$bin" help 2>/dev/null |
            awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}')
        COMPREPLY=($(compgen -W "$words_list" -- "$cur"))
        return 0
    fi
    cmd=${COMP_WORDS[1]}
    case $prev in
        --config|--port-file|--http-port-file|--db|--file|--out|--output|-c|-o)
            COMPREPLY=($(compgen -f -- "$cur"))
            return 0 ;;
    esac
    if [[ $cur == -* ]]; then
        words_list=$("$bin" "$cmd" --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
        COMPREPLY=($(compgen -W "$words_list" -- "$cur"))
        return 0
    fi
    if [[ $COMP_CWORD -eq 2 ]]; then
        # the words right after "rebound CMD" in its usage lines:
        # "rebound queue pause|resume|remove|latency Q..." gives pause, resume, ...
        words_list=$("$bin" "$cmd" --help 2>/dev/null | awk -v c="$cmd" '
            { for (i = 1; i < NF - 1; i++) if ($i == "rebound" && $(i + 1) == c) print $(i + 2) }' |
            tr '|' '\n' | grep -E '^[a-z][a-z-]*$' | sort -u)
        if [[ -n $words_list ]]; then
            COMPREPLY=($(compgen -W "$words_list" -- "$cur"))
            return 0
        fi
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
    return 0
}
complete -F _rebound rebound
