shown() {
  # $1 (what a file holds) as a message may show it: its first line, at most 120 characters, of a
  # stack name's characters only, never raw text a terminal would act on.
  printf '%s' "$1" | head -n 1 | cut -c 1-120 | tr -cd 'A-Za-z0-9._/@-'
}
