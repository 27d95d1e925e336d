#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
int main(int argc,char**argv){
  size_t v=atol(argv[1]); int n=atoi(argv[2]); const char*path=argv[3]; int wb=atoi(argv[4]); long fsz=atol(argv[5]);
  char*src=malloc(v); for(size_t i=0;i<v;i++) src[i]=rand();
  int fd=-1; off_t off=0, wbat=0; int files=0; double t=now();
  for(int i=0;i<n;i++){
    if(fd<0||off>=fsz){ if(fd>=0){fdatasync(fd);close(fd);} char p[256]; snprintf(p,256,"%s.%d",path,files++); unlink(p); fd=open(p,O_CREAT|O_RDWR|O_TRUNC,0644); off=0; wbat=0;}
    pwrite(fd,src,v,off); off+=v;
    if(wb && off-wbat>=(1<<20)){ sync_file_range(fd,wbat,off-wbat,SYNC_FILE_RANGE_WRITE); wbat=off; }
  }
  double c=(now()-t)/n;
  printf("value %zu file %ld wb %d: %.1f us per append (incl fdatasync per file)\n",v,fsz,wb,c);
  for(int i=0;i<files;i++){char p[256]; snprintf(p,256,"%s.%d",path,i); unlink(p);}
}
