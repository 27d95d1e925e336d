/*
 * api.c - calls every function declared in LevelDB 1.23's <leveldb/c.h>
 * and checks what it returns.
 *
 * Usage: api DIR    (DIR is created if missing; databases go in DIR/<name>)
 *
 * Areas, one function each: version numbers, env and test directory,
 * options setters, open/close flags, put/get/delete, the errptr convention,
 * write batches, synced writes, snapshots, iterators (including pointer
 * lifetime), properties, approximate sizes and compaction, a custom
 * comparator, custom and bloom filter policies, repair and destroy.
 *
 * stdout is a transcript that must be byte-identical for any two correct
 * implementations: it never shows pointers, paths, timings, file numbers,
 * file sizes, error texts or the full leveldb.stats text.  The first failed
 * check prints file:line to stderr and exits with status 1.
 */
#define _POSIX_C_SOURCE 200809L

#include <leveldb/c.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "check.h"

/* ------------------------------------------------------------------ */
/* shared state and helpers                                           */

static const char *g_dir;           /* the DIR argument */
static leveldb_env_t *g_env;        /* default env, used by every db */
static leveldb_cache_t *g_cache;    /* shared LRU block cache */
static leveldb_readoptions_t *g_ro; /* plain read options */
static leveldb_writeoptions_t *g_wo;

/* Options with every plain setter applied; callers add the rest. */
static leveldb_options_t *new_options(int create) {
  leveldb_options_t *o = leveldb_options_create();
  CHECK(o != NULL);
  leveldb_options_set_create_if_missing(o, (uint8_t)create);
  leveldb_options_set_error_if_exists(o, 0);
  leveldb_options_set_paranoid_checks(o, 1);
  leveldb_options_set_env(o, g_env);
  leveldb_options_set_info_log(o, NULL); /* no public logger constructor */
  leveldb_options_set_cache(o, g_cache);
  leveldb_options_set_write_buffer_size(o, 256 * 1024);
  leveldb_options_set_max_open_files(o, 100);
  leveldb_options_set_block_size(o, 1024);
  leveldb_options_set_block_restart_interval(o, 8);
  leveldb_options_set_max_file_size(o, 2 * 1024 * 1024);
  leveldb_options_set_compression(o, leveldb_no_compression);
  leveldb_options_set_compression(o, leveldb_snappy_compression);
  return o;
}

/* Remove any database left at NAME by an earlier run. */
static void fresh(const char *name) {
  char *err = NULL;
  leveldb_options_t *o = leveldb_options_create();
  leveldb_destroy_db(o, db_path(name), &err);
  CHECK_NOERR(err);
  leveldb_options_destroy(o);
}

static leveldb_t *open_db(const leveldb_options_t *o, const char *name) {
  char *err = NULL;
  leveldb_t *db = leveldb_open(o, db_path(name), &err);
  CHECK_NOERR(err);
  CHECK(db != NULL);
  return db;
}

static void put_str(leveldb_t *db, const char *k, const char *v) {
  char *err = NULL;
  leveldb_put(db, g_wo, k, strlen(k), v, strlen(v), &err);
  CHECK_NOERR(err);
}

static void del_str(leveldb_t *db, const char *k) {
  char *err = NULL;
  leveldb_delete(db, g_wo, k, strlen(k), &err);
  CHECK_NOERR(err);
}

/* Get K; returns a NUL-terminated malloc'd copy, or NULL if missing. */
static char *get_str(leveldb_t *db, const leveldb_readoptions_t *ro,
                     const char *k) {
  char *err = NULL;
  size_t len = 12345;
  char *v = leveldb_get(db, ro, k, strlen(k), &len, &err);
  CHECK_NOERR(err);
  if (v == NULL) {
    CHECK(len == 0);
    return NULL;
  }
  char *copy = malloc(len + 1);
  CHECK(copy != NULL);
  memcpy(copy, v, len);
  copy[len] = '\0';
  leveldb_free(v);
  return copy;
}

/* Check that K reads as V (V == NULL: missing) and print "get K -> V". */
static void expect_get(leveldb_t *db, const leveldb_readoptions_t *ro,
                       const char *label, const char *k, const char *v) {
  char *got = get_str(db, ro, k);
  if (v == NULL) {
    if (got != NULL) FAIL("get %s: expected missing, got '%s'", k, got);
    say("%sget %s -> (missing)", label, k);
  } else {
    if (got == NULL) FAIL("get %s: expected '%s', got missing", k, v);
    if (strcmp(got, v) != 0) FAIL("get %s: expected '%s', got '%s'", k, v, got);
    say("%sget %s -> %s", label, k, *v ? v : "''");
  }
  free(got);
}

/* Fixed-size text accumulator for transcript lines. */
struct text {
  char s[8192];
  size_t n;
};

static void text_add(struct text *t, const char *p, size_t n) {
  CHECK(t->n + n < sizeof t->s);
  memcpy(t->s + t->n, p, n);
  t->n += n;
  t->s[t->n] = '\0';
}

static void text_str(struct text *t, const char *s) { text_add(t, s, strlen(s)); }

/* Walk an iterator from its current position, "k=v k=v ...". */
static void iter_collect(leveldb_iterator_t *it, int forward, struct text *t) {
  t->n = 0;
  t->s[0] = '\0';
  for (; leveldb_iter_valid(it);
       forward ? leveldb_iter_next(it) : leveldb_iter_prev(it)) {
    size_t kl = 0, vl = 0;
    const char *k = leveldb_iter_key(it, &kl);
    const char *v = leveldb_iter_value(it, &vl);
    CHECK(k != NULL && v != NULL);
    if (t->n) text_str(t, " ");
    text_add(t, k, kl);
    text_str(t, "=");
    text_add(t, v, vl);
  }
  char *err = NULL;
  leveldb_iter_get_error(it, &err);
  CHECK_NOERR(err);
}

static void expect_iter(leveldb_t *db, const leveldb_readoptions_t *ro,
                        const char *label, int forward, const char *want) {
  struct text t;
  leveldb_iterator_t *it = leveldb_create_iterator(db, ro);
  CHECK(it != NULL);
  if (forward)
    leveldb_iter_seek_to_first(it);
  else
    leveldb_iter_seek_to_last(it);
  iter_collect(it, forward, &t);
  leveldb_iter_destroy(it);
  if (strcmp(t.s, want) != 0) FAIL("%s: expected '%s', got '%s'", label, want, t.s);
  say("%s: %s", label, t.s);
}

/* Deterministic byte pattern for generated values. */
static void fill_pattern(char *p, size_t n, unsigned seed) {
  uint32_t x = 2463534242u ^ (seed * 2654435761u);
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    p[i] = (char)('a' + x % 26);
  }
}

/* ------------------------------------------------------------------ */
/* version, env, cache                                                */

static void test_version(void) {
  int major = leveldb_major_version();
  int minor = leveldb_minor_version();
  CHECK(major == 1);
  CHECK(minor == 23);
  say("version: %d.%d", major, minor);
}

static void test_env(void) {
  g_env = leveldb_create_default_env();
  CHECK(g_env != NULL);
  char *td = leveldb_env_get_test_directory(g_env);
  CHECK(td != NULL);
  CHECK(td[0] != '\0');
  leveldb_free(td);
  say("env: default env created; test directory non-NULL");

  /* A second default env can be created and destroyed independently. */
  leveldb_env_t *other = leveldb_create_default_env();
  CHECK(other != NULL);
  leveldb_env_destroy(other);
  say("env: second default env created and destroyed");

  g_cache = leveldb_cache_create_lru(1 << 20);
  CHECK(g_cache != NULL);
  leveldb_cache_t *small = leveldb_cache_create_lru(4096);
  CHECK(small != NULL);
  leveldb_cache_destroy(small);
  say("cache: lru caches created");

  g_ro = leveldb_readoptions_create();
  CHECK(g_ro != NULL);
  g_wo = leveldb_writeoptions_create();
  CHECK(g_wo != NULL);
  leveldb_writeoptions_set_sync(g_wo, 0);
}

/* ------------------------------------------------------------------ */
/* open / close                                                       */

static void test_open_close(void) {
  char *err = NULL;
  leveldb_t *db;
  fresh("open");

  leveldb_options_t *o = new_options(0);
  db = leveldb_open(o, db_path("open"), &err);
  CHECK(db == NULL);
  CHECK_ERR(err);
  leveldb_free(err);
  err = NULL;
  say("open missing db without create_if_missing: failed with message");

  leveldb_options_set_create_if_missing(o, 1);
  db = open_db(o, "open");
  put_str(db, "hello", "world");
  leveldb_close(db);
  say("open with create_if_missing: ok");

  leveldb_options_set_error_if_exists(o, 1);
  db = leveldb_open(o, db_path("open"), &err);
  CHECK(db == NULL);
  CHECK_ERR(err);
  leveldb_free(err);
  err = NULL;
  say("open existing db with error_if_exists: failed with message");

  leveldb_options_set_error_if_exists(o, 0);
  leveldb_options_set_create_if_missing(o, 0);
  db = open_db(o, "open");
  expect_get(db, g_ro, "reopened: ", "hello", "world");
  leveldb_close(db);
  leveldb_options_destroy(o);
}

/* ------------------------------------------------------------------ */
/* put / get / delete                                                 */

static void test_basic(void) {
  char *err = NULL;
  size_t len;
  char *v;
  fresh("basic");
  leveldb_options_t *o = new_options(1);
  leveldb_t *db = open_db(o, "basic");

  put_str(db, "k1", "v1");
  expect_get(db, g_ro, "", "k1", "v1");
  put_str(db, "k1", "v1-overwritten");
  expect_get(db, g_ro, "", "k1", "v1-overwritten");
  del_str(db, "k1");
  expect_get(db, g_ro, "after delete: ", "k1", NULL);

  /* Missing key: NULL and *vallen set to 0. */
  len = 777;
  v = leveldb_get(db, g_ro, "nosuch", 6, &len, &err);
  CHECK_NOERR(err);
  CHECK(v == NULL);
  CHECK(len == 0);
  say("get nosuch -> NULL, vallen=0");

  /* Deleting a missing key succeeds. */
  del_str(db, "never-written");
  say("delete of missing key: ok");

  /* Empty value: non-NULL pointer with length 0. */
  put_str(db, "empty", "");
  len = 777;
  v = leveldb_get(db, g_ro, "empty", 5, &len, &err);
  CHECK_NOERR(err);
  CHECK(v != NULL);
  CHECK(len == 0);
  leveldb_free(v);
  say("get empty -> non-NULL, vallen=0");

  /* Keys and values are byte strings: embedded NULs survive. */
  leveldb_put(db, g_wo, "nul\0key", 7, "v\0al", 4, &err);
  CHECK_NOERR(err);
  v = leveldb_get(db, g_ro, "nul\0key", 7, &len, &err);
  CHECK_NOERR(err);
  CHECK(v != NULL && len == 4 && memcmp(v, "v\0al", 4) == 0);
  leveldb_free(v);
  v = leveldb_get(db, g_ro, "nul", 3, &len, &err);
  CHECK_NOERR(err);
  CHECK(v == NULL);
  say("embedded NUL bytes: key and value round-trip, prefix is distinct");

  /* A large value. */
  size_t big = 300000;
  char *bv = malloc(big);
  CHECK(bv != NULL);
  fill_pattern(bv, big, 42);
  leveldb_put(db, g_wo, "big", 3, bv, big, &err);
  CHECK_NOERR(err);
  v = leveldb_get(db, g_ro, "big", 3, &len, &err);
  CHECK_NOERR(err);
  CHECK(v != NULL && len == big && memcmp(v, bv, big) == 0);
  leveldb_free(v);
  free(bv);
  say("large value (300000 bytes): round-trip");

  /* Read options setters. */
  leveldb_readoptions_t *ro = leveldb_readoptions_create();
  leveldb_readoptions_set_verify_checksums(ro, 1);
  leveldb_readoptions_set_fill_cache(ro, 0);
  expect_get(db, ro, "verify_checksums=1 fill_cache=0: ", "empty", "");
  leveldb_readoptions_set_verify_checksums(ro, 0);
  leveldb_readoptions_set_fill_cache(ro, 1);
  expect_get(db, ro, "verify_checksums=0 fill_cache=1: ", "k1", NULL);
  leveldb_readoptions_destroy(ro);

  leveldb_close(db);
  leveldb_options_destroy(o);
}

/* ------------------------------------------------------------------ */
/* errptr convention                                                  */

static void test_errptr(void) {
  fresh("errptr");
  fresh("errptr-missing");
  leveldb_options_t *o = new_options(0);

  /* A failing call replaces a message that is already there. */
  char *err = strdup("stale message");
  CHECK(err != NULL);
  leveldb_t *db = leveldb_open(o, db_path("errptr-missing"), &err);
  CHECK(db == NULL);
  CHECK_ERR(err);
  CHECK(strcmp(err, "stale message") != 0);
  leveldb_free(err);
  say("errptr: failing call replaces an existing message");

  /* Success leaves a NULL errptr NULL. */
  leveldb_options_set_create_if_missing(o, 1);
  err = NULL;
  db = leveldb_open(o, db_path("errptr"), &err);
  CHECK(db != NULL);
  CHECK(err == NULL);
  leveldb_put(db, g_wo, "a", 1, "b", 1, &err);
  CHECK(err == NULL);
  size_t len;
  char *v = leveldb_get(db, g_ro, "a", 1, &len, &err);
  CHECK(err == NULL);
  leveldb_free(v);
  say("errptr: success leaves NULL errptr NULL");

  /* Success does not touch a message that is already there. */
  char *pre = strdup("pre-set");
  CHECK(pre != NULL);
  err = pre;
  leveldb_put(db, g_wo, "c", 1, "d", 1, &err);
  CHECK(err == pre);
  CHECK(strcmp(err, "pre-set") == 0);
  leveldb_free(err);
  say("errptr: success leaves an existing message untouched");

  leveldb_close(db);
  leveldb_options_destroy(o);
}

/* ------------------------------------------------------------------ */
/* write batches                                                      */

static void batch_put_cb(void *state, const char *k, size_t klen,
                         const char *v, size_t vlen) {
  struct text *t = state;
  if (t->n) text_str(t, " ");
  text_str(t, "put(");
  text_add(t, k, klen);
  text_str(t, "=");
  text_add(t, v, vlen);
  text_str(t, ")");
}

static void batch_del_cb(void *state, const char *k, size_t klen) {
  struct text *t = state;
  if (t->n) text_str(t, " ");
  text_str(t, "del(");
  text_add(t, k, klen);
  text_str(t, ")");
}

static void expect_batch(const leveldb_writebatch_t *b, const char *label,
                         const char *want) {
  struct text t;
  t.n = 0;
  t.s[0] = '\0';
  leveldb_writebatch_iterate(b, &t, batch_put_cb, batch_del_cb);
  if (strcmp(t.s, want) != 0) FAIL("%s: expected '%s', got '%s'", label, want, t.s);
  say("%s: %s", label, t.n ? t.s : "(empty)");
}

static void test_writebatch(void) {
  char *err = NULL;
  fresh("batch");
  leveldb_options_t *o = new_options(1);
  leveldb_t *db = open_db(o, "batch");
  put_str(db, "y", "old-y");
  put_str(db, "gone", "soon");

  leveldb_writebatch_t *b = leveldb_writebatch_create();
  CHECK(b != NULL);
  expect_batch(b, "new batch", "");
  leveldb_writebatch_put(b, "a", 1, "1", 1);
  leveldb_writebatch_put(b, "b", 1, "2", 1);
  leveldb_writebatch_delete(b, "a", 1);
  leveldb_writebatch_put(b, "c", 1, "", 0);
  expect_batch(b, "batch", "put(a=1) put(b=2) del(a) put(c=)");
  leveldb_writebatch_clear(b);
  expect_batch(b, "batch after clear", "");

  leveldb_writebatch_put(b, "x", 1, "1", 1);
  leveldb_writebatch_delete(b, "y", 1);
  leveldb_writebatch_delete(b, "gone", 4);
  leveldb_writebatch_t *b2 = leveldb_writebatch_create();
  leveldb_writebatch_put(b2, "y", 1, "2", 1);
  leveldb_writebatch_put(b2, "z", 1, "3", 1);
  leveldb_writebatch_append(b, b2);
  expect_batch(b, "appended batch", "put(x=1) del(y) del(gone) put(y=2) put(z=3)");
  expect_batch(b2, "source after append", "put(y=2) put(z=3)");

  leveldb_write(db, g_wo, b, &err);
  CHECK_NOERR(err);
  expect_get(db, g_ro, "after batch: ", "x", "1");
  expect_get(db, g_ro, "after batch: ", "y", "2");
  expect_get(db, g_ro, "after batch: ", "z", "3");
  expect_get(db, g_ro, "after batch: ", "gone", NULL);

  /* Within one batch, later operations on a key win. */
  leveldb_writebatch_clear(b);
  leveldb_writebatch_put(b, "q", 1, "1", 1);
  leveldb_writebatch_delete(b, "q", 1);
  leveldb_writebatch_put(b, "r", 1, "1", 1);
  leveldb_writebatch_put(b, "r", 1, "2", 1);
  leveldb_write(db, g_wo, b, &err);
  CHECK_NOERR(err);
  expect_get(db, g_ro, "last op wins: ", "q", NULL);
  expect_get(db, g_ro, "last op wins: ", "r", "2");

  /* Batch values are copied: the caller's buffers can change afterwards. */
  char kbuf[8] = "mut", vbuf[8] = "orig";
  leveldb_writebatch_clear(b);
  leveldb_writebatch_put(b, kbuf, 3, vbuf, 4);
  memcpy(kbuf, "XXX", 3);
  memcpy(vbuf, "XXXX", 4);
  expect_batch(b, "batch copies its input", "put(mut=orig)");

  leveldb_writebatch_destroy(b2);
  leveldb_writebatch_destroy(b);
  leveldb_close(db);
  leveldb_options_destroy(o);
}

/* ------------------------------------------------------------------ */
/* synced writes                                                      */

static void test_sync_write(void) {
  char *err = NULL;
  fresh("sync");
  leveldb_options_t *o = new_options(1);
  leveldb_t *db = open_db(o, "sync");
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  leveldb_writeoptions_set_sync(wo, 1);
  leveldb_put(db, wo, "s1", 2, "synced", 6, &err);
  CHECK_NOERR(err);
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  leveldb_writebatch_put(b, "s2", 2, "batch-synced", 12);
  leveldb_write(db, wo, b, &err);
  CHECK_NOERR(err);
  leveldb_delete(db, wo, "s1", 2, &err);
  CHECK_NOERR(err);
  leveldb_writebatch_destroy(b);
  leveldb_writeoptions_destroy(wo);
  leveldb_close(db);

  db = open_db(o, "sync");
  expect_get(db, g_ro, "sync write, reopened: ", "s1", NULL);
  expect_get(db, g_ro, "sync write, reopened: ", "s2", "batch-synced");
  leveldb_close(db);
  leveldb_options_destroy(o);
}

/* ------------------------------------------------------------------ */
/* snapshots                                                          */

static void test_snapshot(void) {
  fresh("snapshot");
  leveldb_options_t *o = new_options(1);
  leveldb_t *db = open_db(o, "snapshot");
  put_str(db, "s", "old");
  put_str(db, "t", "here");
  const leveldb_snapshot_t *snap = leveldb_create_snapshot(db);
  CHECK(snap != NULL);
  put_str(db, "s", "new");
  del_str(db, "t");
  put_str(db, "u", "later");

  leveldb_readoptions_t *ro = leveldb_readoptions_create();
  leveldb_readoptions_set_snapshot(ro, snap);
  expect_get(db, ro, "at snapshot: ", "s", "old");
  expect_get(db, ro, "at snapshot: ", "t", "here");
  expect_get(db, ro, "at snapshot: ", "u", NULL);
  expect_iter(db, ro, "iter at snapshot", 1, "s=old t=here");
  expect_get(db, g_ro, "current: ", "s", "new");
  expect_get(db, g_ro, "current: ", "t", NULL);

  /* The snapshot still holds after a compaction. */
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  expect_get(db, ro, "at snapshot after compaction: ", "s", "old");
  expect_get(db, ro, "at snapshot after compaction: ", "t", "here");

  leveldb_readoptions_set_snapshot(ro, NULL);
  expect_get(db, ro, "snapshot cleared: ", "s", "new");
  leveldb_release_snapshot(db, snap);
  expect_iter(db, g_ro, "iter after release", 1, "s=new u=later");

  leveldb_readoptions_destroy(ro);
  leveldb_close(db);
  leveldb_options_destroy(o);
}

/* ------------------------------------------------------------------ */
/* iterators                                                          */

static void expect_at(leveldb_iterator_t *it, const char *label,
                      const char *k, const char *v) {
  if (k == NULL) {
    CHECK(!leveldb_iter_valid(it));
    say("%s -> (invalid)", label);
    return;
  }
  CHECK(leveldb_iter_valid(it));
  size_t kl = 0, vl = 0;
  const char *kp = leveldb_iter_key(it, &kl);
  const char *vp = leveldb_iter_value(it, &vl);
  CHECK_BYTES(kp, kl, k);
  CHECK_BYTES(vp, vl, v);
  say("%s -> %s=%s", label, k, v);
}

static void test_iterator(void) {
  fresh("iter");
  leveldb_options_t *o = new_options(1);
  leveldb_t *db = open_db(o, "iter");

  /* Some keys in a table, some in the memtable, one deletion on top. */
  put_str(db, "a", "1");
  put_str(db, "c", "3");
  put_str(db, "e", "5");
  put_str(db, "x", "gone");
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  put_str(db, "b", "2");
  put_str(db, "d", "4");
  put_str(db, "c", "3b");
  del_str(db, "x");

  expect_iter(db, g_ro, "iter forward", 1, "a=1 b=2 c=3b d=4 e=5");
  expect_iter(db, g_ro, "iter backward", 0, "e=5 d=4 c=3b b=2 a=1");

  leveldb_iterator_t *it = leveldb_create_iterator(db, g_ro);
  CHECK(it != NULL);
  CHECK(!leveldb_iter_valid(it));
  say("new iterator: not valid");
  leveldb_iter_seek(it, "c", 1);
  expect_at(it, "seek c", "c", "3b");
  leveldb_iter_seek(it, "bb", 2);
  expect_at(it, "seek bb", "c", "3b");
  leveldb_iter_prev(it);
  expect_at(it, "prev", "b", "2");
  leveldb_iter_next(it);
  expect_at(it, "next", "c", "3b");
  leveldb_iter_next(it);
  expect_at(it, "next", "d", "4");
  leveldb_iter_prev(it);
  expect_at(it, "prev", "c", "3b");
  leveldb_iter_seek(it, "", 0);
  expect_at(it, "seek ''", "a", "1");
  leveldb_iter_prev(it);
  expect_at(it, "prev from first", NULL, NULL);
  leveldb_iter_seek(it, "z", 1);
  expect_at(it, "seek z", NULL, NULL);
  leveldb_iter_seek_to_last(it);
  expect_at(it, "seek_to_last", "e", "5");
  leveldb_iter_next(it);
  expect_at(it, "next from last", NULL, NULL);
  leveldb_iter_seek_to_first(it);
  expect_at(it, "seek_to_first", "a", "1");
  leveldb_iter_seek(it, "x", 1);
  expect_at(it, "seek x (deleted)", NULL, NULL);
  char *err = NULL;
  leveldb_iter_get_error(it, &err);
  CHECK_NOERR(err);
  say("iter_get_error: none");

  /* The iterator is a snapshot: later writes are invisible to it. */
  put_str(db, "bb", "new");
  leveldb_iter_seek(it, "b", 1);
  expect_at(it, "seek b after a concurrent put", "b", "2");
  leveldb_iter_next(it);
  expect_at(it, "next", "c", "3b");
  leveldb_iter_destroy(it);
  expect_iter(db, g_ro, "new iterator sees the put", 1,
              "a=1 b=2 bb=new c=3b d=4 e=5");

  leveldb_close(db);
  leveldb_options_destroy(o);
}

/* Key/value pointers stay valid until the iterator moves. */
#define PTR_KEYS 40

static void ptr_key(char *buf, size_t cap, int i) {
  snprintf(buf, cap, "ptr%03d", i);
}

static size_t ptr_vlen(int i) { return (size_t)(i % 7) * 900 + (size_t)i; }

static void test_iterator_pointers(void) {
  char kb[32], other[32];
  char vb[8192];
  char *err = NULL;
  fresh("iterptr");
  leveldb_options_t *o = new_options(1);
  leveldb_t *db = open_db(o, "iterptr");
  for (int i = 0; i < PTR_KEYS; i++) {
    ptr_key(kb, sizeof kb, i);
    fill_pattern(vb, ptr_vlen(i), (unsigned)i);
    leveldb_put(db, g_wo, kb, strlen(kb), vb, ptr_vlen(i), &err);
    CHECK_NOERR(err);
    if (i == PTR_KEYS / 2) leveldb_compact_range(db, NULL, 0, NULL, 0);
  }

  for (int dir = 0; dir < 2; dir++) {
    leveldb_iterator_t *it = leveldb_create_iterator(db, g_ro);
    int i = dir == 0 ? 0 : PTR_KEYS - 1;
    int seen = 0;
    if (dir == 0)
      leveldb_iter_seek_to_first(it);
    else
      leveldb_iter_seek_to_last(it);
    for (; leveldb_iter_valid(it); i += dir == 0 ? 1 : -1, seen++) {
      size_t kl = 0, vl = 0, kl2 = 0, vl2 = 0, gl = 0;
      const char *kp = leveldb_iter_key(it, &kl);
      const char *vp = leveldb_iter_value(it, &vl);
      /* Calls that do not move the iterator. */
      CHECK(leveldb_iter_valid(it));
      const char *kp2 = leveldb_iter_key(it, &kl2);
      const char *vp2 = leveldb_iter_value(it, &vl2);
      CHECK(kl2 == kl && vl2 == vl);
      CHECK(memcmp(kp2, kp, kl) == 0);
      ptr_key(other, sizeof other, (i * 13 + 5) % PTR_KEYS);
      char *g = leveldb_get(db, g_ro, other, strlen(other), &gl, &err);
      CHECK_NOERR(err);
      CHECK(g != NULL);
      leveldb_free(g);
      /* Writes while the iterator is positioned: rewrite another key with
         the same value and delete a key that does not exist. */
      int oi = (i * 13 + 5) % PTR_KEYS;
      fill_pattern(vb, ptr_vlen(oi), (unsigned)oi);
      leveldb_put(db, g_wo, other, strlen(other), vb, ptr_vlen(oi), &err);
      CHECK_NOERR(err);
      leveldb_delete(db, g_wo, "zz-unrelated", 12, &err);
      CHECK_NOERR(err);
      /* The first pointers must still show the right bytes. */
      ptr_key(kb, sizeof kb, i);
      fill_pattern(vb, ptr_vlen(i), (unsigned)i);
      CHECK_BYTES(kp, kl, kb);
      CHECK(vl == ptr_vlen(i));
      CHECK(vl == 0 || memcmp(vp, vb, vl) == 0);
      CHECK(vl == 0 || memcmp(vp2, vb, vl) == 0);
      if (dir == 0)
        leveldb_iter_next(it);
      else
        leveldb_iter_prev(it);
    }
    CHECK(seen == PTR_KEYS);
    leveldb_iter_destroy(it);
    say("iterator pointers (%s): %d entries stable until the next move",
        dir == 0 ? "forward" : "backward", seen);
  }
  leveldb_close(db);
  leveldb_options_destroy(o);
}

/* ------------------------------------------------------------------ */
/* properties, approximate sizes, compaction                          */

static void test_properties(void) {
  char key[32], val[128];
  char *err = NULL;
  fresh("props");
  leveldb_options_t *o = new_options(1);
  leveldb_t *db = open_db(o, "props");
  for (int i = 0; i < 500; i++) {
    snprintf(key, sizeof key, "p%05d", i);
    fill_pattern(val, 100, (unsigned)i);
    leveldb_put(db, g_wo, key, strlen(key), val, 100, &err);
    CHECK_NOERR(err);
  }

  char *p = leveldb_property_value(db, "leveldb.stats");
  CHECK(p != NULL);
  leveldb_free(p);
  say("property leveldb.stats: non-NULL");

  leveldb_compact_range(db, NULL, 0, NULL, 0);
  p = leveldb_property_value(db, "leveldb.num-files-at-level0");
  CHECK(p != NULL);
  CHECK(strcmp(p, "0") == 0);
  say("property leveldb.num-files-at-level0 after compact_range: %s", p);
  leveldb_free(p);

  p = leveldb_property_value(db, "leveldb.sstables");
  CHECK(p != NULL);
  leveldb_free(p);
  say("property leveldb.sstables: non-NULL");

  p = leveldb_property_value(db, "leveldb.approximate-memory-usage");
  CHECK(p != NULL);
  char *end = NULL;
  errno = 0;
  unsigned long long mem = strtoull(p, &end, 10);
  (void)mem;
  CHECK(errno == 0 && end != p && *end == '\0');
  leveldb_free(p);
  say("property leveldb.approximate-memory-usage: a number");

  p = leveldb_property_value(db, "leveldb.no-such-property");
  CHECK(p == NULL);
  say("property leveldb.no-such-property: NULL");
  p = leveldb_property_value(db, "no-prefix");
  CHECK(p == NULL);
  say("property no-prefix: NULL");

  leveldb_close(db);
  leveldb_options_destroy(o);
}

static void test_sizes_and_compaction(void) {
  char key[32], val[256];
  char *err = NULL;
  const int n = 2000;
  const size_t vlen = 200;
  fresh("sizes");
  leveldb_options_t *o = new_options(1);
  leveldb_options_set_compression(o, leveldb_no_compression);
  leveldb_t *db = open_db(o, "sizes");
  for (int i = 0; i < n; i++) {
    snprintf(key, sizeof key, "k%05d", i);
    fill_pattern(val, vlen, (unsigned)i);
    leveldb_put(db, g_wo, key, strlen(key), val, vlen, &err);
    CHECK_NOERR(err);
  }

  /* compact_range with every kind of bound. */
  leveldb_compact_range(db, "k00100", 6, "k00200", 6);
  leveldb_compact_range(db, NULL, 0, "k00500", 6);
  leveldb_compact_range(db, "k01500", 6, NULL, 0);
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  say("compact_range: bounded, NULL start, NULL limit, both NULL: ok");

  const char *start[2] = {"k", "x1"};
  const char *limit[2] = {"l", "x2"};
  size_t start_len[2] = {1, 2};
  size_t limit_len[2] = {1, 2};
  uint64_t sizes[2] = {0, 0};
  leveldb_approximate_sizes(db, 2, start, start_len, limit, limit_len, sizes);
  uint64_t raw = (uint64_t)n * (vlen + 6);
  CHECK(sizes[0] > 0);
  CHECK(sizes[0] >= raw / 4 && sizes[0] <= raw * 4);
  say("approximate size of [k, l) holding %d uncompressed entries: "
      "within [raw/4, 4*raw]", n);
  CHECK(sizes[1] < 4096);
  say("approximate size of empty range [x1, x2): below 4096");

  /* Everything still reads back. */
  int found = 0;
  for (int i = 0; i < n; i++) {
    size_t gl;
    snprintf(key, sizeof key, "k%05d", i);
    fill_pattern(val, vlen, (unsigned)i);
    char *g = leveldb_get(db, g_ro, key, strlen(key), &gl, &err);
    CHECK_NOERR(err);
    CHECK(g != NULL && gl == vlen && memcmp(g, val, vlen) == 0);
    leveldb_free(g);
    found++;
  }
  say("after compaction: %d of %d keys read back", found, n);
  leveldb_close(db);
  leveldb_options_destroy(o);
}

/* ------------------------------------------------------------------ */
/* custom comparator                                                  */

struct cmp_state {
  int destroyed;
  const char *name;
};

static void cmp_destructor(void *state) {
  ((struct cmp_state *)state)->destroyed++;
}

static int bytewise(const char *a, size_t alen, const char *b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int r = n ? memcmp(a, b, n) : 0;
  if (r != 0) return r < 0 ? -1 : 1;
  return alen < blen ? -1 : (alen > blen ? 1 : 0);
}

static int reverse_compare(void *state, const char *a, size_t alen,
                           const char *b, size_t blen) {
  (void)state;
  return -bytewise(a, alen, b, blen);
}

static const char *cmp_name(void *state) {
  return ((struct cmp_state *)state)->name;
}

static void test_comparator(void) {
  char *err = NULL;
  struct cmp_state s1 = {0, "strata-test.reverse"};
  struct cmp_state s2 = {0, "strata-test.reverse"};
  fresh("reverse");

  leveldb_comparator_t *cmp =
      leveldb_comparator_create(&s1, cmp_destructor, reverse_compare, cmp_name);
  CHECK(cmp != NULL);
  leveldb_options_t *o = new_options(1);
  leveldb_options_set_comparator(o, cmp);
  leveldb_t *db = open_db(o, "reverse");
  put_str(db, "a", "1");
  put_str(db, "b", "2");
  put_str(db, "ab", "12");
  put_str(db, "c", "3");
  expect_iter(db, g_ro, "reverse comparator, forward", 1, "c=3 b=2 ab=12 a=1");
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  expect_iter(db, g_ro, "reverse comparator after compaction, forward", 1,
              "c=3 b=2 ab=12 a=1");
  expect_iter(db, g_ro, "reverse comparator after compaction, backward", 0,
              "a=1 ab=12 b=2 c=3");
  leveldb_iterator_t *it = leveldb_create_iterator(db, g_ro);
  leveldb_iter_seek(it, "bz", 2);
  expect_at(it, "reverse comparator: seek bz", "b", "2");
  leveldb_iter_destroy(it);
  put_str(db, "d", "4");
  leveldb_close(db);
  leveldb_options_destroy(o);
  CHECK(s1.destroyed == 0);
  say("comparator destructor not called before comparator_destroy");

  /* The default comparator has a different name: open must fail. */
  o = new_options(0);
  db = leveldb_open(o, db_path("reverse"), &err);
  CHECK(db == NULL);
  CHECK_ERR(err);
  leveldb_free(err);
  err = NULL;
  say("reopen with default comparator: failed");

  /* A different comparator object with the same name works. */
  leveldb_comparator_t *cmp2 =
      leveldb_comparator_create(&s2, cmp_destructor, reverse_compare, cmp_name);
  leveldb_options_set_comparator(o, cmp2);
  db = open_db(o, "reverse");
  say("reopen with same-named comparator: ok");
  expect_get(db, g_ro, "reverse db: ", "ab", "12");
  expect_iter(db, g_ro, "reverse comparator reopened, forward", 1,
              "d=4 c=3 b=2 ab=12 a=1");
  leveldb_close(db);
  leveldb_options_destroy(o);

  leveldb_comparator_destroy(cmp);
  leveldb_comparator_destroy(cmp2);
  CHECK(s1.destroyed == 1);
  CHECK(s2.destroyed == 1);
  say("comparator destructors: each called once at comparator_destroy");
}

/* ------------------------------------------------------------------ */
/* filter policies                                                    */

struct filter_state {
  int destroyed;
  int created;   /* create_filter calls */
  int queried;   /* key_may_match calls */
  int bad_input; /* unexpected keys or filter bytes seen */
};

static int g_filter_match = 1; /* what key_may_match answers */

static void filter_destructor(void *state) {
  ((struct filter_state *)state)->destroyed++;
}

/* Keys are "fk" followed by 4 digits; anything else is a bad input. */
static int filter_key_ok(const char *k, size_t len) {
  return len == 6 && memcmp(k, "fk", 2) == 0;
}

static char *filter_create(void *state, const char *const *keys,
                           const size_t *lens, int num_keys,
                           size_t *filter_len) {
  struct filter_state *fs = state;
  fs->created++;
  if (num_keys <= 0) fs->bad_input++;
  for (int i = 0; i < num_keys; i++)
    if (!filter_key_ok(keys[i], lens[i])) fs->bad_input++;
  char *f = malloc(4);
  if (f == NULL) abort();
  memcpy(f, "fake", 4);
  *filter_len = 4;
  return f;
}

static uint8_t filter_match(void *state, const char *key, size_t len,
                            const char *filter, size_t filter_len) {
  struct filter_state *fs = state;
  fs->queried++;
  if (!filter_key_ok(key, len)) fs->bad_input++;
  if (filter_len != 4 || memcmp(filter, "fake", 4) != 0) fs->bad_input++;
  return (uint8_t)g_filter_match;
}

static const char *filter_name(void *state) {
  (void)state;
  return "strata-test.fakefilter";
}

static void test_filter_custom(void) {
  char key[16];
  struct filter_state fs;
  memset(&fs, 0, sizeof fs);
  fresh("filter");
  leveldb_filterpolicy_t *fp = leveldb_filterpolicy_create(
      &fs, filter_destructor, filter_create, filter_match, filter_name);
  CHECK(fp != NULL);
  leveldb_options_t *o = new_options(1);
  leveldb_options_set_filter_policy(o, fp);
  leveldb_t *db = open_db(o, "filter");
  for (int i = 0; i < 200; i++) {
    snprintf(key, sizeof key, "fk%04d", i);
    put_str(db, key, "present");
  }
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  CHECK(fs.created > 0);
  say("custom filter: create_filter called when tables were written");

  g_filter_match = 1;
  expect_get(db, g_ro, "filter says maybe: ", "fk0005", "present");
  int before = fs.queried;
  g_filter_match = 0;
  expect_get(db, g_ro, "filter says no: ", "fk0005", NULL);
  CHECK(fs.queried > before);
  say("custom filter: key_may_match consulted for a table read");

  /* Iteration does not consult the filter. */
  leveldb_iterator_t *it = leveldb_create_iterator(db, g_ro);
  int count = 0;
  for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it);
       leveldb_iter_next(it))
    count++;
  leveldb_iter_destroy(it);
  CHECK(count == 200);
  say("filter says no: iterator still sees %d keys", count);

  /* The memtable answers without the filter. */
  put_str(db, "fk9999", "in-memtable");
  expect_get(db, g_ro, "filter says no: ", "fk9999", "in-memtable");
  del_str(db, "fk9999");
  leveldb_close(db);

  /* Reopen: tables written earlier still carry this filter. */
  g_filter_match = 1;
  db = open_db(o, "filter");
  expect_get(db, g_ro, "reopened, filter says maybe: ", "fk0123", "present");
  g_filter_match = 0;
  expect_get(db, g_ro, "reopened, filter says no: ", "fk0123", NULL);
  g_filter_match = 1;
  leveldb_close(db);
  leveldb_options_destroy(o);

  CHECK(fs.bad_input == 0);
  say("custom filter: callbacks saw user keys and the filter bytes we made");
  CHECK(fs.destroyed == 0);
  leveldb_filterpolicy_destroy(fp);
  CHECK(fs.destroyed == 1);
  say("filter policy destructor: called once at filterpolicy_destroy");
}

static void test_filter_bloom(void) {
  char key[32];
  char *err = NULL;
  const int n = 3000;
  fresh("bloom");
  leveldb_filterpolicy_t *bloom = leveldb_filterpolicy_create_bloom(10);
  CHECK(bloom != NULL);
  leveldb_options_t *o = new_options(1);
  leveldb_options_set_filter_policy(o, bloom);
  leveldb_t *db = open_db(o, "bloom");
  for (int i = 0; i < n; i++) {
    snprintf(key, sizeof key, "bloom%06d", i * 2);
    leveldb_put(db, g_wo, key, strlen(key), key, strlen(key), &err);
    CHECK_NOERR(err);
  }
  leveldb_close(db);
  db = open_db(o, "bloom");
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  int found = 0, absent = 0;
  for (int i = 0; i < 2 * n; i++) {
    size_t len;
    snprintf(key, sizeof key, "bloom%06d", i);
    char *v = leveldb_get(db, g_ro, key, strlen(key), &len, &err);
    CHECK_NOERR(err);
    if (i % 2 == 0) {
      CHECK_BYTES(v, len, key);
      found++;
    } else {
      CHECK(v == NULL);
      absent++;
    }
    leveldb_free(v);
  }
  say("bloom filter db: %d present keys found, %d absent keys missing", found,
      absent);
  leveldb_close(db);
  leveldb_options_destroy(o);
  leveldb_filterpolicy_destroy(bloom);
}

/* ------------------------------------------------------------------ */
/* repair and destroy                                                 */

static void test_repair_destroy(void) {
  char key[32], val[64];
  char *err = NULL;
  const int n = 600;
  fresh("repair");
  leveldb_options_t *o = new_options(1);
  leveldb_t *db = open_db(o, "repair");
  for (int i = 0; i < n; i++) {
    snprintf(key, sizeof key, "r%04d", i);
    snprintf(val, sizeof val, "value-%d", i * 7);
    put_str(db, key, val);
    if (i == n / 2) leveldb_compact_range(db, NULL, 0, NULL, 0);
  }
  for (int i = 0; i < n; i += 10) {
    snprintf(key, sizeof key, "r%04d", i);
    del_str(db, key);
  }
  leveldb_close(db);

  leveldb_repair_db(o, db_path("repair"), &err);
  CHECK_NOERR(err);
  say("repair_db of a closed db: ok");

  leveldb_options_set_create_if_missing(o, 0);
  db = open_db(o, "repair");
  int present = 0, missing = 0;
  for (int i = 0; i < n; i++) {
    snprintf(key, sizeof key, "r%04d", i);
    snprintf(val, sizeof val, "value-%d", i * 7);
    char *got = get_str(db, g_ro, key);
    if (i % 10 == 0) {
      CHECK(got == NULL);
      missing++;
    } else {
      CHECK(got != NULL && strcmp(got, val) == 0);
      present++;
    }
    free(got);
  }
  say("after repair: %d keys read back, %d deleted keys missing", present,
      missing);
  leveldb_close(db);

  leveldb_destroy_db(o, db_path("repair"), &err);
  CHECK_NOERR(err);
  say("destroy_db: ok");
  db = leveldb_open(o, db_path("repair"), &err);
  CHECK(db == NULL);
  CHECK_ERR(err);
  leveldb_free(err);
  say("open after destroy_db without create_if_missing: failed");
  leveldb_options_destroy(o);
}

/* ------------------------------------------------------------------ */

int main(int argc, char **argv) {
  check_program = "api";
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  check_dir = g_dir;
  if (mkdir(g_dir, 0755) != 0 && errno != EEXIST) {
    perror(g_dir);
    return 2;
  }

  test_version();
  test_env();
  test_open_close();
  test_basic();
  test_errptr();
  test_writebatch();
  test_sync_write();
  test_snapshot();
  test_iterator();
  test_iterator_pointers();
  test_properties();
  test_sizes_and_compaction();
  test_comparator();
  test_filter_custom();
  test_filter_bloom();
  test_repair_destroy();

  leveldb_readoptions_destroy(g_ro);
  leveldb_writeoptions_destroy(g_wo);
  leveldb_cache_destroy(g_cache);
  leveldb_env_destroy(g_env);
  say("api: all checks passed");
  return 0;
}
