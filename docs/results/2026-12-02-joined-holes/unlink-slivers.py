import ctypes, os, time, sys
libc=ctypes.CDLL("libc.so.6", use_errno=True)
libc.fallocate.argtypes=[ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
d=sys.argv[1]
rec=102400+40
buf=os.urandom(4<<20)
def mk(path):
    fd=os.open(path, os.O_CREAT|os.O_RDWR|os.O_TRUNC, 0o644)
    os.write(fd, buf); os.fdatasync(fd); return fd
n=(4<<20)//rec
def inner(a,b):
    s=(a+4095)//4096*4096; e=b//4096*4096
    return (s, e-s) if e>s else None
res={'sliver':[], 'merged':[], 'whole':[]}
for trial in range(20):
    for mode in res:
        fd=mk(d+'/f')
        t0=time.time()
        if mode!='whole':
            for i in range(n):
                a=i*rec; b=a+rec
                if mode=='merged': a=max(0,(i)*rec) if i==0 else a; a = 0 if i>0 else a  # merged: extend back to start of dead prefix
                h=inner(a,b)
                if h: libc.fallocate(fd,3,h[0],h[1])
        t1=time.time()
        os.close(fd)
        os.unlink(d+'/f')
        t2=time.time()
        res[mode].append(((t1-t0)*1000,(t2-t1)*1000))
for m,v in res.items():
    v.sort(key=lambda x:x[0]+x[1]); mid=v[len(v)//2]
    print(f"{m}: punches {mid[0]:.2f} ms, unlink {mid[1]:.2f} ms (median of {len(v)})")
