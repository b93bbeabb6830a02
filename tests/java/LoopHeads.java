// Methods whose first instruction is also a branch target (javac puts the head of a loop that
// starts a method at offset 0, and the back-edge jumps there), run under the shadow-stack agent
// (tests/agents/shadowstack.c) by tests/loop_heads.rs. Each method is called CALLS times; main
// prints "CALLS <method> <n>" for each, and the agent's METHOD_ENTRY counts must equal them.
public class LoopHeads {
    static final int CALLS = 7;
    static int sink;

    // 0: iload_0; ifle; iinc; goto 0
    static int whileHead(int n) {
        while (n > 0) {
            n--;
        }
        return n;
    }

    // 0: iload_0; iinc; ifgt/ifle ...; goto 0
    static int forEver(int n) {
        for (;;) {
            if (n-- <= 0) {
                return n;
            }
        }
    }

    // 0: iinc; iload_0; ifgt 0
    static int doWhile(int n) {
        do {
            n--;
        } while (n > 0);
        return n;
    }

    // offset 0 starts a protected range and is the loop's head
    static int tryLoop(int n) {
        do {
            try {
                n--;
                if (n == 2) {
                    throw new IllegalStateException("two");
                }
            } catch (IllegalStateException e) {
                n--;
            }
        } while (n > 0);
        return n;
    }

    // offset 0 loads the lock of a synchronized block inside the loop
    static int syncLoop(Object lock, int n) {
        do {
            synchronized (lock) {
                n--;
            }
        } while (n > 0);
        return n;
    }

    // a switch at the loop's head, one case continuing the loop
    static int switchLoop(int n) {
        for (;;) {
            switch (n) {
                case 0:
                    return 0;
                case 1:
                    n = 0;
                    continue;
                default:
                    n -= 2;
            }
        }
    }

    // left by an exception thrown inside the loop
    static int throwLoop(int n) {
        while (n > 0) {
            n--;
            if (n == 1) {
                throw new IllegalArgumentException("one");
            }
        }
        return n;
    }

    // an instance method (METHOD_ENTRY2 passes its receiver)
    int instLoop(int n) {
        while (n > 0) {
            n -= 1;
        }
        return n + sink;
    }

    // recursion inside the loop: the shadow stack must stay balanced across frames
    static int recLoop(int n) {
        while (n > 0) {
            n = recLoop(n - 1) - 1;
        }
        return 0;
    }

    public static void main(String[] args) {
        Object lock = new Object();
        LoopHeads self = new LoopHeads();
        int recCalls = 0;
        for (int i = 0; i < CALLS; i++) {
            sink += whileHead(5);
            sink += forEver(4);
            sink += doWhile(6);
            sink += tryLoop(5);
            sink += syncLoop(lock, 3);
            sink += switchLoop(7);
            try {
                sink += throwLoop(4);
            } catch (IllegalArgumentException e) {
                sink++;
            }
            sink += self.instLoop(5);
        }
        // recLoop(3): 1 + recLoop(2) + ... calls: c(n) = 1 + c(n-1) for the first iteration only
        // (each inner call returns 0, so n becomes -1 and the loop ends): c(3) = 4.
        sink += recLoop(3);
        recCalls = 4;
        for (String m : new String[] {"whileHead", "forEver", "doWhile", "tryLoop", "syncLoop", "switchLoop", "throwLoop", "instLoop"}) {
            System.out.println("CALLS " + m + " " + CALLS);
        }
        System.out.println("CALLS recLoop " + recCalls);
        System.out.println("DONE " + sink);
    }
}
