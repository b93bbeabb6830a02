#!/usr/bin/env bash
# Compares the machine code of the shim's hot paths in two builds: for each function of the
# tracker natives (methods, alloc), GetCallTrace and the jobjectID doors, the call-trace room,
# the ID functions and the gate, its instruction count in each build and whether its body is
# the same once addresses are blanked out. For a change that must leave the hot paths as they
# were (a refactoring): build the old tree, keep its .so, build the new one, run
#
#   scripts/hot-disasm.sh OLD.so [NEW.so]        NEW defaults to target/release/libjvmpi_shim.so
#
# A function inlined into its callers in one build shows `-` there. Needs binutils (nm, objdump).
# The release profile's 16 codegen units are filled by a partitioning that moves with unrelated
# changes, and with it what is inlined where (a `log!` call's body, a small function kept out of
# line): functions nobody touched can differ. For a comparison that shows only what the change
# did, build both trees with one unit: CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 (and a
# CARGO_TARGET_DIR of their own, to keep target/release as it is).
set -u
old=$1 new=${2:-target/release/libjvmpi_shim.so}
pat='jvmpi_shim::(rooms::methods::(enter|enter_this|exit|insn|if_int|if_cmp|if_ref|if_acmp|table_switch|lookup_switch|init_throw|enter_general|exit_general|insn_general)|rooms::alloc::(on_new|on_init|on_new_object|on_new_shaped|on_init_shaped|on_new_object_shaped|on_made|on_reflect_new|report|report_with|reserve_with|init)|doors::jvmpi::(get_call_trace|jobject_id_to_jobject|jobject_to_jobject_id)|rooms::calltrace::[a-z_]+|face::ids::[a-z_]+|face::events::[a-z_]+)$'
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# The function's instructions, addresses and symbol names blanked out.
body() {
    local so=$1 sym=$2 line start size
    line=$(nm -C -S "$so" | awk -v s="$sym" '{n=$4; for(i=5;i<=NF;i++) n=n" "$i} n==s && ($3=="t"||$3=="T") {print $1, $2; exit}')
    [ -z "$line" ] && return 0
    start=$((16#${line% *})); size=$((16#${line#* }))
    objdump -d --no-show-raw-insn -C --start-address=$start --stop-address=$((start + size)) "$so" \
        | awk -F'\t' 'NF>=2 && $1 ~ /^ *[0-9a-f]+:$/ {print $2}' \
        | sed -E 's/0x[0-9a-f]+/ADDR/g; s/\b[0-9a-f]{5,}\b/ADDR/g; s/<[^>]*>/<F>/g; s/-ADDR/ADDR/g'
}
syms=$( (nm -C "$old"; nm -C "$new") | awk '$2=="t"||$2=="T" {n=$3; for(i=4;i<=NF;i++) n=n" "$i; print n}' | grep -E "$pat" | sort -u)
printf '%-48s %6s %6s %s\n' function old new body
same=0 differ=0
while read -r s; do
    body "$old" "$s" >"$tmp/a"; body "$new" "$s" >"$tmp/b"
    a=$(wc -l <"$tmp/a"); b=$(wc -l <"$tmp/b")
    [ "$a" = 0 ] && a=-; [ "$b" = 0 ] && b=-
    if cmp -s "$tmp/a" "$tmp/b"; then r=same; same=$((same + 1)); else r=differs; differ=$((differ + 1)); fi
    printf '%-48s %6s %6s %s\n' "${s#jvmpi_shim::}" "$a" "$b" "$r"
done <<<"$syms"
echo "$same the same, $differ different"
