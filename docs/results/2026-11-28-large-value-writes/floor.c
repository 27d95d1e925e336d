#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
int main(int argc,char**argv){
  size_t v=atol(argv[1]); int n=atoi(argv[2]); const char*path=argv[3];
  char*src=malloc(v); for(size_t i=0;i<v;i++) src[i]=rand();
  // a) memcpy into fresh (never touched) memory
  char*dst=malloc(v*(size_t)n); double t=now();
  for(int i=0;i<n;i++) memcpy(dst+(size_t)i*v,src,v);
  double a=(now()-t)/n;
  // b) memcpy into already-touched memory
  t=now(); for(int i=0;i<n;i++) memcpy(dst+(size_t)i*v,src,v); double b=(now()-t)/n;
  free(dst);
  // c) pwrite append to a fresh file
  unlink(path); int fd=open(path,O_CREAT|O_RDWR,0644); t=now();
  for(int i=0;i<n;i++) pwrite(fd,src,v,(off_t)i*v);
  double c=(now()-t)/n;
  // d) pwrite over the same file's existing (cached) pages
  t=now(); for(int i=0;i<n;i++) pwrite(fd,src,v,(off_t)i*v); double d=(now()-t)/n;
  close(fd); unlink(path);
  printf("value %zu: memcpy fresh %.1f us, memcpy warm %.1f us, pwrite append %.1f us, pwrite overwrite cached %.1f us\n",v,a,b,c,d);
}
