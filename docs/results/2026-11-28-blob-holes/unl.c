#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <time.h>
int main(int argc,char**argv){ int n=50; size_t sz=atoi(argv[1]); char*buf=malloc(sz); for(size_t i=0;i<sz;i++)buf[i]=i;
 char p[64]; for(int i=0;i<n;i++){sprintf(p,"/tmp/unl%d",i); int fd=open(p,O_CREAT|O_TRUNC|O_WRONLY,0644); write(fd,buf,sz); fdatasync(fd); close(fd);}
 struct timespec a,b; clock_gettime(CLOCK_MONOTONIC,&a);
 for(int i=0;i<n;i++){sprintf(p,"/tmp/unl%d",i); unlink(p);}
 clock_gettime(CLOCK_MONOTONIC,&b); printf("unlink of %zu bytes: %.2f ms each\n", sz, ((b.tv_sec-a.tv_sec)*1e9+(b.tv_nsec-a.tv_nsec))/1e6/n); }
