/*
 * misuse.c - odd or careless uses of the LevelDB C API that LevelDB 1.23
 * survives with well-defined results.  A drop-in replacement must survive
 * them the same way.
 *
 * Usage: misuse DIR    (DIR is created if missing; databases go in DIR/<name>)
 *
 * Checked here: opening a db twice in one process (the second open fails
 * with a lock error), destroy_db of an open db (fails, data intact), opening
 * a missing db without create_if_missing, destroy_db of a missing path,
 * repair_db of a missing path (must not crash; result not checked), empty
 * keys and values, NULL pointers with zero lengths, operations on an empty
 * db, compact_range with start > limit, snapshots released out of order,
 * writes while an iterator is live, re-seeking an exhausted iterator,
 * options/readoptions/writeoptions destroyed while objects made from them
 * are still in use, leveldb_free(NULL), empty write batches, batch reuse,
 * malformed property names, approximate_sizes with zero ranges, NULL
 * arguments that c.h functions accept (set_info_log, set_filter_policy,
 * readoptions_set_snapshot, compact_range bounds) and repeated open/close.
 *
 * NOT tolerated by LevelDB 1.23, so deliberately NOT tested (undefined
 * behaviour: assertion failures in debug builds, crashes or silent damage in
 * release builds):
 *   - using an iterator or snapshot after leveldb_close of its db, or closing
 *     a db while iterators are still live (VersionSet asserts that no
 *     versions are referenced; release builds touch freed memory);
 *   - leveldb_close(NULL), and NULL db/iterator/batch/options arguments in
 *     general (they are dereferenced);
 *   - errptr == NULL (SaveError asserts errptr != NULL; release builds only
 *     survive it while every call succeeds);
 *   - vallen == NULL in leveldb_get, klen/vlen == NULL in iter_key/value;
 *   - iter_key/iter_value/iter_next/iter_prev on an iterator that is not
 *     valid (asserts in debug builds);
 *   - releasing a snapshot twice, or on another db;
 *   - leveldb_options_set_comparator/set_cache/set_env with NULL (set_cache
 *     dereferences its argument; a NULL comparator or env crashes at open);
 *   - destroying a comparator, filter policy, cache or env while a db that
 *     uses it is open;
 *   - a NULL key/value pointer with a NON-zero length;
 *   - leveldb_repair_db on a db that is open: 1.23's repairer takes no lock
 *     and rewrites the files under the live db (it even reports success);
 *   - leveldb_writebatch_append(b, b) (self-append; relies on std::string
 *     aliasing rules, untested);
 *   - freeing returned buffers with anything but leveldb_free or free.
 */
#define _POSIX_C_SOURCE 200809L

#include <leveldb/c.h>

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "check.h"

static const char *g_dir;
static leveldb_readoptions_t *g_ro;
static leveldb_writeoptions_t *g_wo;

static leveldb_options_t *new_options(int create) {
  leveldb_options_t *o = leveldb_options_create();
  CHECK(o != NULL);
  leveldb_options_set_create_if_missing(o, (uint8_t)create);
  return o;
}

static void fresh(const char *name) {
  char *err = NULL;
  leveldb_options_t *o = leveldb_options_create();
  leveldb_destroy_db(o, db_path(name), &err);
  CHECK_NOERR(err);
  leveldb_options_destroy(o);
}

static leveldb_t *open_fresh(const char *name) {
  char *err = NULL;
  fresh(name);
  leveldb_options_t *o = new_options(1);
  leveldb_t *db = leveldb_open(o, db_path(name), &err);
  CHECK_NOERR(err);
  CHECK(db != NULL);
  leveldb_options_destroy(o);
  return db;
}

static void put_str(leveldb_t *db, const char *k, const char *v) {
  char *err = NULL;
  leveldb_put(db, g_wo, k, strlen(k), v, strlen(v), &err);
  CHECK_NOERR(err);
}

/* 1 if K reads as V (V == NULL: absent), checked with lengths. */
static void expect_get(leveldb_t *db, const leveldb_readoptions_t *ro,
                       const char *k, size_t kl, const char *v) {
  char *err = NULL;
  size_t len = 999;
  char *got = leveldb_get(db, ro, k, kl, &len, &err);
  CHECK_NOERR(err);
  if (v == NULL) {
    if (got != NULL) FAIL("get '%.*s': expected absent", (int)kl, k);
    CHECK(len == 0);
  } else {
    if (got == NULL) FAIL("get '%.*s': expected '%s', got absent", (int)kl, k, v);
    if (len != strlen(v) || memcmp(got, v, len) != 0)
      FAIL("get '%.*s': expected '%s', got '%.*s'", (int)kl, k, v, (int)len, got);
  }
  leveldb_free(got);
}

static int contains_nocase(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (; *hay; hay++) {
    size_t i = 0;
    while (i < n && hay[i] &&
           tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
      i++;
    if (i == n) return 1;
  }
  return 0;
}

static int count_entries(leveldb_iterator_t *it) {
  int n = 0;
  for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it);
       leveldb_iter_next(it))
    n++;
  return n;
}

/* ------------------------------------------------------------------ */

static void test_double_open(void) {
  char *err = NULL;
  leveldb_t *db = open_fresh("twice");
  put_str(db, "k", "v");
  leveldb_options_t *o = new_options(1);

  leveldb_t *db2 = leveldb_open(o, db_path("twice"), &err);
  CHECK(db2 == NULL);
  CHECK_ERR(err);
  if (!contains_nocase(err, "lock")) FAIL("error does not mention a lock: %s", err);
  leveldb_free(err);
  err = NULL;
  say("second open failed");

  /* destroy_db needs the lock too: it fails and the data survives. */
  leveldb_destroy_db(o, db_path("twice"), &err);
  CHECK_ERR(err);
  leveldb_free(err);
  err = NULL;
  expect_get(db, g_ro, "k", 1, "v");
  say("destroy_db of an open db failed; data intact");

  leveldb_close(db);
  db = leveldb_open(o, db_path("twice"), &err);
  CHECK_NOERR(err);
  expect_get(db, g_ro, "k", 1, "v");
  leveldb_close(db);
  say("open after close: ok");

  /* Many open/close cycles. */
  for (int i = 0; i < 20; i++) {
    db = leveldb_open(o, db_path("twice"), &err);
    CHECK_NOERR(err);
    char v[16];
    snprintf(v, sizeof v, "%d", i);
    put_str(db, "cycle", v);
    leveldb_close(db);
  }
  db = leveldb_open(o, db_path("twice"), &err);
  CHECK_NOERR(err);
  expect_get(db, g_ro, "cycle", 5, "19");
  leveldb_close(db);
  say("20 open/close cycles: last write survives");
  leveldb_options_destroy(o);
}

static void test_missing(void) {
  char *err = NULL;
  fresh("missing");
  leveldb_options_t *o = new_options(0);
  leveldb_t *db = leveldb_open(o, db_path("missing"), &err);
  CHECK(db == NULL);
  CHECK_ERR(err);
  leveldb_free(err);
  err = NULL;
  say("open of a missing db without create_if_missing: failed");

  leveldb_destroy_db(o, db_path("missing"), &err);
  CHECK_NOERR(err);
  say("destroy_db of a missing path: ok");

  /* LevelDB 1.23 "repairs" a missing path into an empty db; only survival
     is checked here. */
  leveldb_repair_db(o, db_path("missing-repair"), &err);
  leveldb_free(err);
  err = NULL;
  fresh("missing-repair");
  say("repair_db of a missing path: returned");
  leveldb_options_destroy(o);
}

static void test_empty_keys_values(void) {
  char *err = NULL;
  size_t len;
  leveldb_t *db = open_fresh("empty");

  leveldb_put(db, g_wo, "", 0, "empty-key", 9, &err);
  CHECK_NOERR(err);
  expect_get(db, g_ro, "", 0, "empty-key");
  leveldb_put(db, g_wo, "k", 1, "", 0, &err);
  CHECK_NOERR(err);
  expect_get(db, g_ro, "k", 1, "");
  say("zero-length key and zero-length value: stored and read back");

  leveldb_iterator_t *it = leveldb_create_iterator(db, g_ro);
  leveldb_iter_seek_to_first(it);
  CHECK(leveldb_iter_valid(it));
  size_t kl = 99, vl = 99;
  leveldb_iter_key(it, &kl);
  leveldb_iter_value(it, &vl);
  CHECK(kl == 0 && vl == 9);
  leveldb_iter_next(it);
  CHECK(leveldb_iter_valid(it));
  leveldb_iter_value(it, &vl);
  CHECK(vl == 0);
  leveldb_iter_seek(it, "", 0);
  CHECK(leveldb_iter_valid(it));
  leveldb_iter_key(it, &kl);
  CHECK(kl == 0);
  leveldb_iter_destroy(it);
  say("iterator: empty key sorts first; empty value has length 0");

  leveldb_put(db, g_wo, "", 0, "", 0, &err);
  CHECK_NOERR(err);
  expect_get(db, g_ro, "", 0, "");
  leveldb_delete(db, g_wo, "", 0, &err);
  CHECK_NOERR(err);
  expect_get(db, g_ro, "", 0, NULL);
  say("empty key with empty value, then deleted: absent");

  /* NULL pointers with zero lengths are empty slices. */
  leveldb_put(db, g_wo, NULL, 0, NULL, 0, &err);
  CHECK_NOERR(err);
  char *v = leveldb_get(db, g_ro, NULL, 0, &len, &err);
  CHECK_NOERR(err);
  CHECK(v != NULL && len == 0);
  leveldb_free(v);
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  leveldb_writebatch_put(b, NULL, 0, NULL, 0);
  leveldb_writebatch_delete(b, NULL, 0);
  leveldb_write(db, g_wo, b, &err);
  CHECK_NOERR(err);
  leveldb_writebatch_destroy(b);
  expect_get(db, g_ro, "", 0, NULL);
  it = leveldb_create_iterator(db, g_ro);
  leveldb_iter_seek(it, NULL, 0);
  CHECK(leveldb_iter_valid(it));
  leveldb_iter_key(it, &kl);
  CHECK(kl == 1);
  leveldb_iter_destroy(it);
  leveldb_delete(db, g_wo, NULL, 0, &err);
  CHECK_NOERR(err);
  say("NULL pointer with zero length: treated as the empty string");

  leveldb_close(db);
}

static void test_empty_db(void) {
  char *err = NULL;
  leveldb_t *db = open_fresh("emptydb");
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  leveldb_compact_range(db, "a", 1, "z", 1);
  say("compact_range on an empty db: ok");

  char *p = leveldb_property_value(db, "leveldb.num-files-at-level0");
  CHECK(p != NULL && strcmp(p, "0") == 0);
  leveldb_free(p);
  say("empty db: num-files-at-level0 = 0");

  const char *s = "a", *l = "z";
  size_t sl = 1, ll = 1;
  uint64_t size = 12345;
  leveldb_approximate_sizes(db, 1, &s, &sl, &l, &ll, &size);
  CHECK(size == 0);
  say("empty db: approximate size of [a, z) = 0");

  leveldb_iterator_t *it = leveldb_create_iterator(db, g_ro);
  leveldb_iter_seek_to_first(it);
  CHECK(!leveldb_iter_valid(it));
  leveldb_iter_seek_to_last(it);
  CHECK(!leveldb_iter_valid(it));
  leveldb_iter_seek(it, "m", 1);
  CHECK(!leveldb_iter_valid(it));
  leveldb_iter_get_error(it, &err);
  CHECK_NOERR(err);
  leveldb_iter_destroy(it);
  say("empty db: iterator never valid, no error");
  expect_get(db, g_ro, "m", 1, NULL);
  leveldb_close(db);
}

static void test_compact_odd_ranges(void) {
  leveldb_t *db = open_fresh("oddrange");
  put_str(db, "a", "1");
  put_str(db, "m", "2");
  put_str(db, "z", "3");
  leveldb_compact_range(db, "z", 1, "a", 1); /* start > limit */
  leveldb_compact_range(db, "m", 1, "m", 1); /* single key */
  leveldb_compact_range(db, "", 0, "", 0);
  expect_get(db, g_ro, "a", 1, "1");
  expect_get(db, g_ro, "m", 1, "2");
  expect_get(db, g_ro, "z", 1, "3");
  say("compact_range with start > limit, start == limit, empty keys: data intact");

  /* num_ranges == 0 with NULL arrays. */
  uint64_t sentinel = 77;
  leveldb_approximate_sizes(db, 0, NULL, NULL, NULL, NULL, &sentinel);
  CHECK(sentinel == 77);
  say("approximate_sizes with 0 ranges: ok, output untouched");
  leveldb_close(db);
}

static void test_snapshots_out_of_order(void) {
  leveldb_t *db = open_fresh("snaps");
  leveldb_readoptions_t *ro = leveldb_readoptions_create();
  put_str(db, "k", "1");
  const leveldb_snapshot_t *s1 = leveldb_create_snapshot(db);
  put_str(db, "k", "2");
  const leveldb_snapshot_t *s2 = leveldb_create_snapshot(db);
  put_str(db, "k", "3");
  const leveldb_snapshot_t *s3 = leveldb_create_snapshot(db);
  put_str(db, "k", "4");

  leveldb_release_snapshot(db, s2);
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  leveldb_readoptions_set_snapshot(ro, s1);
  expect_get(db, ro, "k", 1, "1");
  leveldb_readoptions_set_snapshot(ro, s3);
  expect_get(db, ro, "k", 1, "3");
  leveldb_release_snapshot(db, s1);
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  expect_get(db, ro, "k", 1, "3");
  leveldb_release_snapshot(db, s3);
  leveldb_readoptions_set_snapshot(ro, NULL);
  expect_get(db, ro, "k", 1, "4");
  say("snapshots released middle, first, last: reads stay correct");

  /* Read options destroyed while their snapshot is still held. */
  const leveldb_snapshot_t *s0 = leveldb_create_snapshot(db);
  leveldb_readoptions_set_snapshot(ro, s0);
  put_str(db, "later", "x");
  expect_get(db, ro, "later", 5, NULL);
  leveldb_readoptions_destroy(ro); /* the snapshot outlives the options */
  leveldb_release_snapshot(db, s0);
  say("read options destroyed before their snapshot is released: ok");
  leveldb_close(db);
}

static void test_iterator_vs_writes(void) {
  char *err = NULL;
  leveldb_t *db = open_fresh("iterwrites");
  put_str(db, "a", "1");
  put_str(db, "b", "2");

  leveldb_readoptions_t *ro = leveldb_readoptions_create();
  leveldb_iterator_t *it = leveldb_create_iterator(db, ro);
  leveldb_readoptions_destroy(ro); /* the iterator keeps what it needs */

  put_str(db, "c", "3");
  leveldb_delete(db, g_wo, "a", 1, &err);
  CHECK_NOERR(err);
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  CHECK(count_entries(it) == 2);
  leveldb_iter_seek_to_first(it);
  size_t kl;
  const char *k = leveldb_iter_key(it, &kl);
  CHECK_BYTES(k, kl, "a");
  say("iterator created before writes and a compaction: still sees a, b");

  /* Exhaust it, then re-seek. */
  leveldb_iter_seek_to_last(it);
  leveldb_iter_next(it);
  CHECK(!leveldb_iter_valid(it));
  leveldb_iter_seek_to_first(it);
  CHECK(leveldb_iter_valid(it));
  leveldb_iter_seek(it, "zzz", 3);
  CHECK(!leveldb_iter_valid(it));
  leveldb_iter_seek_to_last(it);
  CHECK(leveldb_iter_valid(it));
  say("exhausted iterator can be re-seeked");
  leveldb_iter_destroy(it);

  it = leveldb_create_iterator(db, g_ro);
  CHECK(count_entries(it) == 2);
  leveldb_iter_seek_to_first(it);
  k = leveldb_iter_key(it, &kl);
  CHECK_BYTES(k, kl, "b");
  leveldb_iter_destroy(it);
  say("iterator destroyed after the writes; a new one sees b, c");
  leveldb_close(db);
}

static void count_put(void *state, const char *k, size_t kl, const char *v,
                      size_t vl) {
  (void)k, (void)kl, (void)v, (void)vl;
  ((int *)state)[0]++;
}

static void count_del(void *state, const char *k, size_t kl) {
  (void)k, (void)kl;
  ((int *)state)[1]++;
}

static void test_batches(void) {
  char *err = NULL;
  int counts[2] = {0, 0};
  leveldb_t *db = open_fresh("batches");

  leveldb_writebatch_t *empty = leveldb_writebatch_create();
  leveldb_writebatch_iterate(empty, counts, count_put, count_del);
  CHECK(counts[0] == 0 && counts[1] == 0);
  say("iterate on an empty batch: no callbacks");

  leveldb_writebatch_t *b = leveldb_writebatch_create();
  leveldb_writebatch_append(b, empty);
  leveldb_writebatch_append(empty, b);
  leveldb_writebatch_iterate(b, counts, count_put, count_del);
  CHECK(counts[0] == 0 && counts[1] == 0);
  say("append of empty batches: still empty");

  leveldb_writebatch_put(b, "k", 1, "v", 1);
  leveldb_writebatch_delete(b, "gone", 4);
  leveldb_writebatch_append(b, empty);
  leveldb_writebatch_iterate(b, counts, count_put, count_del);
  CHECK(counts[0] == 1 && counts[1] == 1);
  say("append of an empty batch to a full one: unchanged");

  leveldb_writebatch_t *c = leveldb_writebatch_create();
  leveldb_writebatch_append(c, b);
  counts[0] = counts[1] = 0;
  leveldb_writebatch_iterate(c, counts, count_put, count_del);
  CHECK(counts[0] == 1 && counts[1] == 1);
  say("append of a full batch to an empty one: copied");

  leveldb_write(db, g_wo, empty, &err);
  CHECK_NOERR(err);
  say("write of an empty batch: ok");

  leveldb_write(db, g_wo, b, &err);
  CHECK_NOERR(err);
  leveldb_write(db, g_wo, b, &err); /* the same batch again */
  CHECK_NOERR(err);
  expect_get(db, g_ro, "k", 1, "v");
  leveldb_writebatch_clear(b);
  leveldb_writebatch_clear(b);
  leveldb_write(db, g_wo, b, &err);
  CHECK_NOERR(err);
  expect_get(db, g_ro, "k", 1, "v");
  say("batch written twice, cleared twice, written empty: ok");

  leveldb_writebatch_destroy(c);
  leveldb_writebatch_destroy(b);
  leveldb_writebatch_destroy(empty);
  leveldb_close(db);
}

static void test_properties(void) {
  leveldb_t *db = open_fresh("props");
  static const struct {
    const char *name;
    const char *want; /* NULL: must return NULL */
  } cases[] = {
      {"leveldb.num-files-at-level6", "0"},
      {"leveldb.num-files-at-level7", NULL},
      {"leveldb.num-files-at-level99", NULL},
      {"leveldb.num-files-at-level", NULL},
      {"leveldb.num-files-at-level1x", NULL},
      {"leveldb.num-files-at-level-1", NULL},
      {"leveldb.", NULL},
      {"", NULL},
      {"LEVELDB.stats", NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *p = leveldb_property_value(db, cases[i].name);
    if (cases[i].want == NULL) {
      if (p != NULL) FAIL("property '%s': expected NULL, got '%s'", cases[i].name, p);
    } else {
      if (p == NULL || strcmp(p, cases[i].want) != 0)
        FAIL("property '%s': expected '%s'", cases[i].name, cases[i].want);
    }
    say("property '%s' -> %s", cases[i].name, p ? p : "NULL");
    leveldb_free(p);
  }
  leveldb_close(db);
}

static void test_null_arguments(void) {
  char *err = NULL;
  leveldb_free(NULL);
  say("leveldb_free(NULL): ok");

  /* Setters that c.h callers commonly pass NULL to. */
  fresh("nulls");
  leveldb_options_t *o = new_options(1);
  leveldb_filterpolicy_t *bloom = leveldb_filterpolicy_create_bloom(10);
  leveldb_options_set_filter_policy(o, bloom);
  leveldb_options_set_filter_policy(o, NULL); /* back to no filter */
  leveldb_options_set_info_log(o, NULL);
  leveldb_t *db = leveldb_open(o, db_path("nulls"), &err);
  CHECK_NOERR(err);
  leveldb_options_destroy(o); /* options are copied at open */
  leveldb_filterpolicy_destroy(bloom); /* not in use: it was unset */
  say("options with NULL filter policy and info_log, destroyed after open: ok");

  /* A whole session of successful calls keeps errptr NULL. */
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  leveldb_put(db, wo, "k", 1, "v", 1, &err);
  CHECK(err == NULL);
  leveldb_writeoptions_destroy(wo); /* write options only matter per call */
  size_t len;
  char *v = leveldb_get(db, g_ro, "k", 1, &len, &err);
  CHECK(err == NULL);
  leveldb_free(v);
  leveldb_delete(db, g_wo, "k", 1, &err);
  CHECK(err == NULL);
  leveldb_iterator_t *it = leveldb_create_iterator(db, g_ro);
  leveldb_iter_seek_to_first(it);
  leveldb_iter_get_error(it, &err);
  CHECK(err == NULL);
  leveldb_iter_destroy(it);
  leveldb_free(err); /* freeing the still-NULL errptr is fine */
  say("successful calls leave errptr NULL");

  leveldb_readoptions_t *ro = leveldb_readoptions_create();
  leveldb_readoptions_set_snapshot(ro, NULL);
  expect_get(db, ro, "k", 1, NULL);
  leveldb_readoptions_destroy(ro);
  say("readoptions_set_snapshot(NULL): reads current state");
  leveldb_close(db);

  /* Destroying objects that were never used. */
  leveldb_readoptions_destroy(leveldb_readoptions_create());
  leveldb_writeoptions_destroy(leveldb_writeoptions_create());
  leveldb_options_destroy(leveldb_options_create());
  leveldb_writebatch_destroy(leveldb_writebatch_create());
  leveldb_cache_destroy(leveldb_cache_create_lru(0));
  leveldb_filterpolicy_destroy(leveldb_filterpolicy_create_bloom(0));
  leveldb_env_destroy(leveldb_create_default_env());
  say("create then destroy unused objects (cache of 0 bytes, bloom of 0 bits): ok");
}

int main(int argc, char **argv) {
  check_program = "misuse";
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
  g_ro = leveldb_readoptions_create();
  g_wo = leveldb_writeoptions_create();

  test_double_open();
  test_missing();
  test_empty_keys_values();
  test_empty_db();
  test_compact_odd_ranges();
  test_snapshots_out_of_order();
  test_iterator_vs_writes();
  test_batches();
  test_properties();
  test_null_arguments();

  leveldb_readoptions_destroy(g_ro);
  leveldb_writeoptions_destroy(g_wo);
  say("misuse: all checks passed");
  return 0;
}
