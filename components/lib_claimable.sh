claimable() {
  # Refuse $FOLDER, before anything is written, when it is not $OWNER's to claim; else print `first`
  # for a new or empty folder (blueprint's layout record alone in it counts as empty), `again` for one
  # $OWNER claimed. Not its to claim: a folder inside a claimed folder other than PARENT_OWNER's (the
  # data folder's owner, for a folder a stack claims inside it; nobody's, for a data folder), whose
  # wipe would remove it with its own; one whose marker names another owner, or is no regular file
  # (marker_of's rule); one that holds files blueprint did not write, which a destroy would remove.
  own="$FOLDER/$OWNER_MARKER"
  container=$(folder_above "$FOLDER")
  if [ -n "$container" ]; then
    holder=$(marker_of "$container/$OWNER_MARKER")
    if [ "$holder" != "$PARENT_OWNER" ]; then
      held=$(shown "$holder")
      if [ -z "$PARENT_OWNER" ]; then
        echo "blueprint: $FOLDER is inside $container, which ${held:-another stack} claimed: a destroy of that one would" \
          "remove this one with it; give $OWNER a folder outside every folder blueprint claimed (blueprint:dataDir)" >&2
      else
        echo "blueprint: $FOLDER is inside $container, which ${held:-nobody blueprint knows} claimed, not $PARENT_OWNER," \
          "in whose data folder it belongs; give that data folder a place of its own (blueprint:dataDir)" >&2
      fi
      exit 1
    fi
  elif [ -n "$PARENT_OWNER" ]; then
    echo "blueprint: $FOLDER belongs in the data folder $PARENT_OWNER claims, and no folder above it is claimed:" \
      "bring that stack up first (uv run blueprint up)" >&2
    exit 1
  fi
  if [ -L "$own" ] || { [ -e "$own" ] && [ ! -f "$own" ]; }; then
    echo "blueprint: $own is no file (a link, or a file of another kind), so whose $FOLDER is cannot be told;" \
      "nothing was changed. If the folder is $OWNER's, make its marker the file blueprint writes, then run the up again:" >&2
    printf '  rm -- %s && echo %s > %s\n' "$(quoted "$own")" "$(quoted "$OWNER")" "$(quoted "$own")" >&2
    exit 1
  elif [ -f "$own" ]; then
    claimed=$(marker_of "$own")
    if [ "$claimed" != "$OWNER" ]; then
      # Shown only with a stack name's characters: the folder may be one that the nodes mount.
      echo "blueprint: $FOLDER belongs to $(shown "$claimed"); give $OWNER its own folder (blueprint:dataDir)" >&2
      case "$claimed" in
        "${OWNER%@*}@"*) echo "blueprint: (that is this stack in another checkout: each checkout has its own id, in" \
          ".pulumi-state/blueprint-checkout-id, and never takes over or removes another's data)" >&2
          id=${claimed##*@}
          # Only an id as blueprint writes it goes into a command: what a file holds is never pasted raw.
          case "$id" in *[!0-9a-f]*) ;; ????????????????)
            echo "blueprint: if it is this checkout's own, and its .pulumi-state/ was lost, write its id back in this" \
              "checkout's folder, then run the up again:" >&2
            printf '  mkdir -p .pulumi-state && printf %s %s > .pulumi-state/blueprint-checkout-id\n' "'%s\\n'" "$id" >&2 ;;
          esac ;;
      esac
      exit 1
    fi
    echo again
  elif [ -d "$FOLDER" ] && [ -n "$(find "$FOLDER" -mindepth 1 -maxdepth 1 ! -name "$LAYOUT_MARKER" | head -n 1)" ]; then
    echo "blueprint: $FOLDER holds files blueprint did not write, which a destroy would remove;" \
      "use a new or empty folder (blueprint:dataDir)" >&2
    exit 1
  else
    echo first
  fi
}
