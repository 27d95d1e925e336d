/*
 * interop.c - checks that a database written by one implementation of the
 * LevelDB C API reads back correctly with another (on-disk compatibility).
 *
 * Usage: interop write DIR   create DIR (must not exist as a db) and fill it
 *        interop read DIR    open DIR, check every key, print a summary
 *
 * The data comes from a fixed generator (no rand()), so both modes know the
 * expected contents.  Writing happens in phases:
 *   1. keys 0..2999 put, then compact_range(NULL, NULL): these live in tables
 *   2. keys 3000..4999 put; every 7th key overwritten; every 5th deleted
 *   3. one synced write batch: keys 5000..5099 put, every 11th key deleted,
 *      every 13th key put again with a third value
 * then the db is closed, leaving phases 2 and 3 in the log.  Both modes use
 * the built-in bloom filter (10 bits per key) and the default compression,
 * so filters and compressed blocks must be compatible too.
 *
 * Keys are "k%06d" plus a suffix of 0..22 letters (every 101st key gets a
 * 150-byte suffix); values are 0..699 bytes, every 97th one about 20 KB,
 * every 10th one (i % 10 == 3) empty.
 *
 * The read summary depends only on the logical contents, so it must be
 * identical whichever library wrote or reads the db.  Any mismatch prints
 * file:line to stderr and exits 1.
 */
#define _POSIX_C_SOURCE 200809L

#include <leveldb/c.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define N_TABLE 3000  /* keys written before the compaction */
#define N_LOG 5000    /* keys below this are written by plain puts */
#define N_BATCH 5100  /* keys N_LOG..N_BATCH-1 come from the batch */
#define N_PROBE 5300  /* keys N_BATCH..N_PROBE-1 are never written */
#define MAX_KEY 200
#define MAX_VAL 22000

/* ------------------------------------------------------------------ */
/* the generator                                                      */

static uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

/* Key i: fixed-width number (so order follows i) plus a varied suffix. */
static size_t make_key(int i, char *buf) {
  int n = snprintf(buf, MAX_KEY, "k%06d", i);
  size_t len = (size_t)n;
  size_t extra = (i % 101 == 0) ? 150 : (size_t)((i * 7) % 23);
  uint32_t x = mix((uint32_t)i + 1U);
  for (size_t j = 0; j < extra; j++) {
    x = mix(x + (uint32_t)j);
    buf[len++] = (char)('a' + x % 26);
  }
  return len;
}

/* Value of key i in generation gen (0, 1 or 2). */
static size_t make_value(int i, int gen, char *buf) {
  size_t len;
  if (i % 10 == 3)
    len = 0;
  else if (i % 97 == 0)
    len = 20000 + (size_t)(i % 1000) + (size_t)gen;
  else
    len = (size_t)((i * 37 + gen * 11) % 700);
  uint32_t x = mix((uint32_t)(i * 3 + gen) ^ 0x9e3779b9U);
  for (size_t j = 0; j < len; j++) {
    if (j % 4 == 0) x = mix(x + (uint32_t)j);
    /* Partly compressible: runs of a repeated byte, then random bytes. */
    buf[j] = (j / 64) % 3 == 0 ? (char)('A' + gen) : (char)(x >> (8 * (j % 4)));
  }
  return len;
}

/* Final generation of key i, or -1 if it must be absent. */
static int expected_gen(int i) {
  if (i >= N_BATCH) return -1;
  if (i >= N_LOG) return 0;
  if (i % 13 == 0) return 2;
  if (i % 11 == 0 || i % 5 == 0) return -1;
  if (i % 7 == 0) return 1;
  return 0;
}

/* ------------------------------------------------------------------ */

static leveldb_filterpolicy_t *g_bloom;

static leveldb_options_t *make_options(int create) {
  leveldb_options_t *o = leveldb_options_create();
  leveldb_options_set_create_if_missing(o, (uint8_t)create);
  leveldb_options_set_error_if_exists(o, (uint8_t)create);
  leveldb_options_set_paranoid_checks(o, 1);
  leveldb_options_set_filter_policy(o, g_bloom);
  return o;
}

static void put_gen(leveldb_t *db, leveldb_writeoptions_t *wo, int i, int gen) {
  static char k[MAX_KEY], v[MAX_VAL];
  char *err = NULL;
  size_t kl = make_key(i, k), vl = make_value(i, gen, v);
  leveldb_put(db, wo, k, kl, v, vl, &err);
  CHECK_NOERR(err);
}

static int do_write(const char *dir) {
  static char k[MAX_KEY], v[MAX_VAL];
  char *err = NULL;
  leveldb_options_t *o = make_options(1);
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  leveldb_t *db = leveldb_open(o, dir, &err);
  CHECK_NOERR(err);
  CHECK(db != NULL);

  /* Phase 1: into tables. */
  for (int i = 0; i < N_TABLE; i++) put_gen(db, wo, i, 0);
  leveldb_compact_range(db, NULL, 0, NULL, 0);

  /* Phase 2: into the log. */
  for (int i = N_TABLE; i < N_LOG; i++) put_gen(db, wo, i, 0);
  for (int i = 0; i < N_LOG; i += 7) put_gen(db, wo, i, 1);
  for (int i = 0; i < N_LOG; i += 5) {
    size_t kl = make_key(i, k);
    leveldb_delete(db, wo, k, kl, &err);
    CHECK_NOERR(err);
  }

  /* Phase 3: one synced batch. */
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  for (int i = N_LOG; i < N_BATCH; i++) {
    size_t kl = make_key(i, k), vl = make_value(i, 0, v);
    leveldb_writebatch_put(b, k, kl, v, vl);
  }
  for (int i = 0; i < N_LOG; i += 11) {
    size_t kl = make_key(i, k);
    leveldb_writebatch_delete(b, k, kl);
  }
  for (int i = 0; i < N_LOG; i += 13) {
    size_t kl = make_key(i, k), vl = make_value(i, 2, v);
    leveldb_writebatch_put(b, k, kl, v, vl);
  }
  leveldb_writeoptions_set_sync(wo, 1);
  leveldb_write(db, wo, b, &err);
  CHECK_NOERR(err);
  leveldb_writebatch_destroy(b);

  leveldb_close(db);
  leveldb_writeoptions_destroy(wo);
  leveldb_options_destroy(o);
  say("interop write: %d keys written in 3 phases", N_BATCH);
  return 0;
}

/* ------------------------------------------------------------------ */

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) {
    h ^= c[i];
    h *= 1099511628211ULL;
  }
  return h;
}

static uint64_t fnv_entry(uint64_t h, const char *k, size_t kl, const char *v,
                          size_t vl) {
  uint64_t lens[2] = {kl, vl};
  h = fnv(h, lens, sizeof lens);
  h = fnv(h, k, kl);
  return fnv(h, v, vl);
}

/* Check the iterator's entry against key i's expected contents. */
static void check_entry(leveldb_iterator_t *it, int i) {
  static char k[MAX_KEY], v[MAX_VAL];
  size_t kl = make_key(i, k), vl = make_value(i, expected_gen(i), v);
  size_t gkl = 0, gvl = 0;
  const char *gk = leveldb_iter_key(it, &gkl);
  const char *gv = leveldb_iter_value(it, &gvl);
  if (gkl != kl || memcmp(gk, k, kl) != 0) FAIL("iterator: wrong key for #%d", i);
  if (gvl != vl || (vl && memcmp(gv, v, vl) != 0))
    FAIL("iterator: wrong value for #%d", i);
}

static int do_read(const char *dir) {
  static char k[MAX_KEY], v[MAX_VAL];
  char *err = NULL;
  leveldb_options_t *o = make_options(0);
  leveldb_readoptions_t *ro = leveldb_readoptions_create();
  leveldb_readoptions_set_verify_checksums(ro, 1);
  leveldb_t *db = leveldb_open(o, dir, &err);
  CHECK_NOERR(err);
  CHECK(db != NULL);

  /* Point lookups, present and absent. */
  int present = 0, absent = 0;
  uint64_t bytes = 0;
  for (int i = 0; i < N_PROBE; i++) {
    size_t kl = make_key(i, k), got_len = 0;
    char *got = leveldb_get(db, ro, k, kl, &got_len, &err);
    CHECK_NOERR(err);
    int gen = expected_gen(i);
    if (gen < 0) {
      if (got != NULL) FAIL("get #%d: expected absent, found a value", i);
      absent++;
    } else {
      size_t vl = make_value(i, gen, v);
      if (got == NULL) FAIL("get #%d: expected a value, found none", i);
      if (got_len != vl || (vl && memcmp(got, v, vl) != 0))
        FAIL("get #%d: wrong value (len %zu, expected %zu)", i, got_len, vl);
      present++;
      bytes += kl + vl;
    }
    leveldb_free(got);
    /* A longer key with the same prefix is never present. */
    if (i % 50 == 0) {
      k[kl] = '~';
      got = leveldb_get(db, ro, k, kl + 1, &got_len, &err);
      CHECK_NOERR(err);
      if (got != NULL) FAIL("get #%d~: expected absent", i);
      absent++;
    }
  }

  /* Forward scan. */
  leveldb_iterator_t *it = leveldb_create_iterator(db, ro);
  uint64_t fwd = 14695981039346656037ULL;
  int count = 0, i = 0;
  for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it);
       leveldb_iter_next(it)) {
    while (i < N_PROBE && expected_gen(i) < 0) i++;
    if (i >= N_PROBE) FAIL("forward scan: unexpected extra entry");
    check_entry(it, i);
    size_t kl, vl;
    const char *kp = leveldb_iter_key(it, &kl);
    const char *vp = leveldb_iter_value(it, &vl);
    fwd = fnv_entry(fwd, kp, kl, vp, vl);
    count++;
    i++;
  }
  leveldb_iter_get_error(it, &err);
  CHECK_NOERR(err);
  if (count != present) FAIL("forward scan saw %d entries, expected %d", count, present);

  /* Backward scan. */
  uint64_t bwd = 14695981039346656037ULL;
  int back = 0;
  i = N_PROBE - 1;
  for (leveldb_iter_seek_to_last(it); leveldb_iter_valid(it);
       leveldb_iter_prev(it)) {
    while (i >= 0 && expected_gen(i) < 0) i--;
    if (i < 0) FAIL("backward scan: unexpected extra entry");
    check_entry(it, i);
    size_t kl, vl;
    const char *kp = leveldb_iter_key(it, &kl);
    const char *vp = leveldb_iter_value(it, &vl);
    bwd = fnv_entry(bwd, kp, kl, vp, vl);
    back++;
    i--;
  }
  leveldb_iter_get_error(it, &err);
  CHECK_NOERR(err);
  if (back != count) FAIL("backward scan saw %d entries, forward %d", back, count);

  /* Seeks onto deleted keys land on the next live key. */
  int seeks = 0;
  for (int j = 0; j < N_LOG; j += 55) { /* multiples of 5 and 11: deleted */
    if (expected_gen(j) >= 0) continue;
    size_t kl = make_key(j, k);
    leveldb_iter_seek(it, k, kl);
    int next = j + 1;
    while (expected_gen(next) < 0) next++;
    CHECK(leveldb_iter_valid(it));
    check_entry(it, next);
    seeks++;
  }
  leveldb_iter_destroy(it);
  leveldb_close(db);
  leveldb_readoptions_destroy(ro);
  leveldb_options_destroy(o);

  say("interop read: %d present keys (%" PRIu64 " bytes), %d absent probes", present,
      bytes, absent);
  say("interop read: forward scan %d entries, checksum %016" PRIx64, count, fwd);
  say("interop read: backward scan %d entries, checksum %016" PRIx64, back, bwd);
  say("interop read: %d seeks onto deleted keys landed on the next key", seeks);
  return 0;
}

int main(int argc, char **argv) {
  check_program = "interop";
  if (argc != 3 || (strcmp(argv[1], "write") != 0 && strcmp(argv[1], "read") != 0)) {
    fprintf(stderr, "usage: %s write|read DIR\n", argv[0]);
    return 2;
  }
  g_bloom = leveldb_filterpolicy_create_bloom(10);
  int rc = strcmp(argv[1], "write") == 0 ? do_write(argv[2]) : do_read(argv[2]);
  leveldb_filterpolicy_destroy(g_bloom);
  return rc;
}
