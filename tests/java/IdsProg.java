/** Object IDs: `keep <n>` holds n items (each with an int[3] and, every 10th, a String) and a
 *  table of them, for an agent that dumps the heap at exit and resolves every object in it;
 *  `churn <total> <live>` allocates <total> items keeping the last <live> alive, with a
 *  collection every <live> allocations, for an agent that watches IDs being reused. */
public class IdsProg {
    static final class Item { int n; int[] data = new int[3]; Object extra; Item(int n) { this.n = n; } }

    static Item[] kept;

    public static void main(String[] args) throws Exception {
        if (args[0].equals("keep")) {
            int n = Integer.parseInt(args[1]);
            kept = new Item[n];
            for (int i = 0; i < n; i++) {
                kept[i] = new Item(i);
                if (i % 10 == 0) kept[i].extra = "s" + i;
            }
            System.gc();
            System.out.println("kept " + n);
        } else {
            long total = Long.parseLong(args[1]);
            int live = Integer.parseInt(args[2]);
            Item[] ring = new Item[live];
            for (long i = 0; i < total; i++) {
                ring[(int) (i % live)] = new Item((int) i);
                if (i % live == live - 1) System.gc();
            }
            System.gc();
            Thread.sleep(600);
            System.gc();
            System.out.println("churned " + total + " " + ring[0].n);
        }
    }
}
