/* Every number the PostgreSQL schema's SQL stores or returns for a C
 * constant: job states and flags, the outcomes the functions return,
 * progress records' states, on_dep_failure modes, the worker registry's
 * sighting kinds, groups' holds. The SQL (src/backend/pg/schema/NNNN.sql and the
 * statements in sql_*.c) writes them as literals, and a released migration
 * is never edited: a database migrated by an earlier release keeps its
 * functions' numbers and its rows', so these numbers are a storage format,
 * not something to generate from the headers. sql_numbers.c checks each
 * one against its C constant at build time (renumbering one fails the
 * build there), and test_pg_schema checks that every number the SQL puts
 * in a state, flags, status, mode or kind position is one this table
 * lists for it. Batch callback statuses and worker signals are not here:
 * the SQL only stores what C passes in (batch bodies are JSON; a worker's
 * signal column defaults to 0, none). Plain data: any thread. */
#ifndef RB_BACKEND_PG_SQL_NUMBERS_H
#define RB_BACKEND_PG_SQL_NUMBERS_H

typedef struct rb_pg_sql_number {
    const char *column; /* "rb_jobs.state", "rb_jobs.flags", "status" (what the
                           functions return), "rb_track.state", "rb_wait.mode",
                           "kind" (rb_worker_seen's p_kinds), "rb_groups.hold"
                           (engine/group.h's holds, schema 16) */
    const char *name;   /* the C constant it stands for */
    int value;          /* the number in the SQL */
} rb_pg_sql_number;

/* The table, ended by an entry whose column is NULL. */
extern const rb_pg_sql_number rb_pg_sql_numbers[];

#endif
