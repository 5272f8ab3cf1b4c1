// Instrument (fault suite, session 23): LD_PRELOAD into fabricbench to log when each process links and renames its
// result files' temporaries, fsyncs, and takes SIGCONT/SIGTERM in its signal thread, one file per process under
// $FB_SHIM_DIR ("<epoch s> <duration s> <tid> <call> <name> rc=<rc>"). It showed Open MPI's orted sending SIGTERM
// one second after SIGCONT and SIGKILL at once after it: a write begun on SIGTERM is cut.
// Build: cc -O2 -shared -fPIC -o fsshim.so fsshim.c -ldl
// Use:   FB_SHIM_DIR=/tmp/shimlog LD_PRELOAD=$PWD/fsshim.so python3 tests/e2e/mpi/faults.py --fabricbench DIR/fabricbench \
//          --mpirun mpiexec --only SIGTERM-between-np4     (DIR's binary must be named fabricbench)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static int logfd = -2;
static double now(void){struct timespec t;clock_gettime(CLOCK_REALTIME,&t);return t.tv_sec+t.tv_nsec/1e9;}
static void lg(const char*what,const char*name,double t0,double t1,int rc){
  if(logfd==-2){const char*d=getenv("FB_SHIM_DIR");char p[512];if(!d){logfd=-1;return;}snprintf(p,sizeof p,"%s/%d.log",d,getpid());logfd=open(p,O_WRONLY|O_CREAT|O_APPEND,0644);}
  if(logfd<0)return;char b[700];int n=snprintf(b,sizeof b,"%.6f %.6f %ld %s %s rc=%d\n",t0,t1-t0,(long)syscall(SYS_gettid),what,name?name:"",rc);write(logfd,b,n);}
int linkat(int a,const char*o,int b,const char*n,int f){static int(*r)(int,const char*,int,const char*,int);if(!r)r=dlsym(RTLD_NEXT,"linkat");double t=now();int rc=r(a,o,b,n,f);lg("linkat",n,t,now(),rc);return rc;}
int renameat(int a,const char*o,int b,const char*n){static int(*r)(int,const char*,int,const char*);if(!r)r=dlsym(RTLD_NEXT,"renameat");double t=now();int rc=r(a,o,b,n);lg("renameat",o,t,now(),rc);return rc;}
int fsync(int fd){static int(*r)(int);if(!r)r=dlsym(RTLD_NEXT,"fsync");double t=now();int rc=r(fd);lg("fsync","",t,now(),rc);return rc;}
int sigwait(const sigset_t*s,int*sig){static int(*r)(const sigset_t*,int*);if(!r)r=dlsym(RTLD_NEXT,"sigwait");int rc=r(s,sig);double t=now();lg("sigwait",*sig==SIGCONT?"CONT":*sig==SIGTERM?"TERM":"other",t,t,rc);return rc;}
int close(int fd){static int(*r)(int);if(!r)r=dlsym(RTLD_NEXT,"close");double t=now();int rc=r(fd);double t1=now();if(t1-t>0.002)lg("close-slow","",t,t1,rc);return rc;}
