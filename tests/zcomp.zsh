#!/usr/bin/zsh -f
# zcomp.zsh FPATH_DIR BIN_DIR LINE: the completions an interactive zsh
# offers for TAB at the end of LINE, one a line. The shell runs in a
# pseudo-terminal (zsh/zpty) with compinit; compadd is wrapped to print
# what the completion functions add.
zmodload zsh/zpty || exit 77
zpty z zsh -f -i
zpty -w z "PS1='%% '; fpath=(${(q)1} \$fpath); PATH=${(q)2}:\$PATH; autoload -U compinit; compinit -u -D"
zpty -w z 'compadd() {
  if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return; fi
  local -a __hits; builtin compadd -A __hits "$@"
  (( $#__hits )) && print -r -- "<C>${(j:<S>:)__hits}</C>"
  builtin compadd "$@"
}'
zpty -w z "zstyle ':completion:*' list-prompt ''; zstyle ':completion:*' select-prompt ''; zstyle ':completion:*' menu no"
zpty -w z "print READY"
zpty -r z line '*READY*'
zpty -r z line '*READY*'
zpty -w -n z "$3"$'\t'
# Read until the shell is quiet for half a second (at most 10 s).
out=""
for i in {1..20}; do
  n=0
  while zpty -r -t z line; do out+=$line; n=1; done
  (( n )) || { (( i > 1 )) && break; }
  sleep 0.5
done
print -r -- ${(F)${(@s:<S>:)${(M)${(f)out//$'\r'/}:#*<C>*}}} | sed 's/.*<C>//; s/<\/C>.*//'
zpty -d z
