#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <time.h>
#include <linux/falloc.h>
int main(int argc,char**argv){
  int n=atoi(argv[2]); size_t sz=atoi(argv[3]);
  char *buf=malloc(sz); for(size_t i=0;i<sz;i++) buf[i]=i*7;
  int fd=open("/tmp/punchtest",O_CREAT|O_TRUNC|O_RDWR,0644);
  for(int i=0;i<n;i++) pwrite(fd,buf,sz,(off_t)i*sz);
  fdatasync(fd);
  if (getenv("DROP")) posix_fadvise(fd,0,0,POSIX_FADV_DONTNEED);
  struct timespec a,b; clock_gettime(CLOCK_MONOTONIC,&a);
  int step = argc>1 ? atoi(argv[1]) : 2;
  int c=0;
  for(int i=0;i<n;i+=step){ off_t o=(off_t)i*sz; off_t s=(o+4095)/4096*4096, e=(o+sz)/4096*4096;
    if(fallocate(fd,FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE,s,e-s)) perror("f"); c++;}
  clock_gettime(CLOCK_MONOTONIC,&b);
  printf("%d punches: %.1f us each\n", c, ((b.tv_sec-a.tv_sec)*1e9+(b.tv_nsec-a.tv_nsec))/1e3/c);
  fdatasync(fd);
  clock_gettime(CLOCK_MONOTONIC,&a);
  printf("fdatasync after: %.1f ms\n", ((a.tv_sec-b.tv_sec)*1e9+(a.tv_nsec-b.tv_nsec))/1e6);
  unlink("/tmp/punchtest"); return 0; }
