/*
 * A flat C interface over WiredTiger's method tables, for strata-bench's WiredTiger peer.
 * WiredTiger's API is structs of function pointers; calling them from Rust would mean
 * restating the struct layouts, so this file makes each call a plain function instead.
 * Keys and values are raw byte strings (key_format=u, value_format=u).
 */
#include <stdlib.h>
#include <string.h>
#include <wiredtiger.h>

int st_wt_open(const char *home, const char *config, WT_CONNECTION **conn) {
    return wiredtiger_open(home, NULL, config, conn);
}

int st_wt_close(WT_CONNECTION *conn) { return conn->close(conn, NULL); }

const char *st_wt_strerror(int err) { return wiredtiger_strerror(err); }

/* Opens a session and, creating the table if needed, a cursor on it. */
int st_wt_session(WT_CONNECTION *conn, const char *create_config, WT_SESSION **session,
    WT_CURSOR **cursor) {
    int ret;
    if ((ret = conn->open_session(conn, NULL, NULL, session)) != 0)
        return ret;
    if ((ret = (*session)->create(*session, "table:kv", create_config)) != 0)
        return ret;
    return (*session)->open_cursor(*session, "table:kv", NULL, NULL, cursor);
}

int st_wt_session_close(WT_SESSION *session) { return session->close(session, NULL); }

static void set_key(WT_CURSOR *c, const void *k, size_t kl) {
    WT_ITEM item;
    memset(&item, 0, sizeof(item));
    item.data = k;
    item.size = kl;
    c->set_key(c, &item);
}

int st_wt_put(WT_CURSOR *c, const void *k, size_t kl, const void *v, size_t vl) {
    WT_ITEM value;
    memset(&value, 0, sizeof(value));
    set_key(c, k, kl);
    value.data = v;
    value.size = vl;
    c->set_value(c, &value);
    return c->insert(c);
}

/* 0 and the value's bytes (valid until the cursor moves), or WT_NOTFOUND. */
int st_wt_get(WT_CURSOR *c, const void *k, size_t kl, const void **v, size_t *vl) {
    WT_ITEM value;
    int ret;
    set_key(c, k, kl);
    if ((ret = c->search(c)) != 0)
        return ret;
    if ((ret = c->get_value(c, &value)) != 0)
        return ret;
    *v = value.data;
    *vl = value.size;
    return 0;
}

int st_wt_del(WT_CURSOR *c, const void *k, size_t kl) {
    set_key(c, k, kl);
    return c->remove(c);
}

int st_wt_reset(WT_CURSOR *c) { return c->reset(c); }
int st_wt_next(WT_CURSOR *c) { return c->next(c); }
int st_wt_prev(WT_CURSOR *c) { return c->prev(c); }

/* The current key and value (valid until the cursor moves). */
int st_wt_current(WT_CURSOR *c, const void **k, size_t *kl, const void **v, size_t *vl) {
    WT_ITEM key, value;
    int ret;
    if ((ret = c->get_key(c, &key)) != 0 || (ret = c->get_value(c, &value)) != 0)
        return ret;
    *k = key.data;
    *kl = key.size;
    *v = value.data;
    *vl = value.size;
    return 0;
}

/* Positions at the first key at or after k: 0, or WT_NOTFOUND past the end. */
int st_wt_seek(WT_CURSOR *c, const void *k, size_t kl) {
    int exact, ret;
    set_key(c, k, kl);
    if ((ret = c->search_near(c, &exact)) != 0)
        return ret;
    return exact < 0 ? c->next(c) : 0;
}

int st_wt_begin(WT_SESSION *s) { return s->begin_transaction(s, NULL); }
/* A transaction at snapshot isolation (the session's default is read-committed). */
int st_wt_begin_snapshot(WT_SESSION *s) {
    return s->begin_transaction(s, "isolation=snapshot");
}
int st_wt_commit(WT_SESSION *s, int sync) {
    return s->commit_transaction(s, sync ? "sync=on" : NULL);
}
int st_wt_rollback(WT_SESSION *s) { return s->rollback_transaction(s, NULL); }
int st_wt_compact(WT_SESSION *s) { return s->compact(s, "table:kv", NULL); }
int st_wt_notfound(void) { return WT_NOTFOUND; }
