public class PartitionFor {
    public static void main(String[] args) {
        int p = Integer.parseInt(args[0]);
        for (int i = 1; i < args.length; i++) {
            String g = args[i];
            int h = g.hashCode();
            int abs = (h == Integer.MIN_VALUE) ? 0 : Math.abs(h);
            System.out.println(h + " " + (abs % p));
        }
    }
}
