#!/bin/sh
# tier: full
# The fault suite (tests/faults/run.sh, `make check-faults`): distributed
# mode under network faults — a node cut off from PostgreSQL without a
# reset, with a reset, inside an ACK transaction, at random moments, a node
# paused past its lease, a database restart (docs/distributed.md, "Network
# faults"). Its cases run one at a time, after the parallel suites.
# Env: REBOUND_TOP (checkout), O (build dir). Exit 0 = pass.
top=${REBOUND_TOP:-$(pwd)}
cd "$top" && O=${O:-build} exec sh tests/faults/run.sh
